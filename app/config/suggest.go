// "Did you mean": the nearest of the names a key or a value could have
// been, by edit distance, for unknown keys and provider names.

package config

// suggest returns the name among names nearest to s, when a typo away
// (at most two edits, and fewer than half of the longer of the two: "ap"
// is "app" with a letter missing, "ab" is not "cb"), else "".
func suggest(s string, names []string) string {
	best, bestD := "", 3
	for _, n := range names {
		if d := editDistance(s, n); d < bestD && 2*d < max(len(s), len(n)) {
			best, bestD = n, d
		}
	}
	return best
}

// didYouMean is suggest's answer as the end of a reason: "; did you mean
// provider?", or "".
func didYouMean(s string, names []string) string {
	if n := suggest(s, names); n != "" {
		return "; did you mean " + n + "?"
	}
	return ""
}

// editDistance is the Levenshtein distance between a and b, a swap of two
// neighbours counting as one edit (listne is one edit from listen).
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
