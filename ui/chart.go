package ui

import (
	"fmt"
	"time"

	"hookbox/app"
)

// chart is an inline SVG bar chart of 24 hourly values, with a time axis
// and a scale; a second series (Bad: failed attempts) stacks in red on
// the first. The hours' labels are UTC in the page; the script rewrites
// them in the browser's time zone (see timeLabel).
type chart struct {
	Bars  []bar
	Ticks []tick
	Max   uint64
	Total uint64
	// BadTotal is the second series' sum (0 and no red bars without one).
	BadTotal uint64
	Scale    uint64 // the top of the value axis: Max rounded up to 1, 2 or 5 × 10ⁿ
	// ScaleLabel is Scale as the axis writes it, at most 4 characters
	// (500k, 2M), so that it fits left of the plot on a phone.
	ScaleLabel string
	// The geometry the template draws with, in SVG units.
	Width, Height, Left, Top, Plot, Bottom, Mid, Right int
	BarWidth                                           int
}

type bar struct {
	X, Y, H int
	// BadY and BadH are the failed attempts' part, above the bar.
	BadY, BadH int
	Label      string
}

// tick is a label of the time axis at X, for the hour starting at Hour.
type tick struct {
	X     int
	Label string
	Hour  time.Time
}

// The chart's geometry, in SVG units: the plot starts at chartLeft (the
// value labels are left of it) and is chartHeight tall from chartTop. A
// chart is drawn as wide as its box: 618 units make a bar 20 units wide,
// readable at half of a 1200 px page and across a phone. On a phone the
// labels are 20 units tall (the CSS), so the margins hold one that size:
// chartLeft a value label of 4 characters (ScaleLabel), chartTop half of
// one centred on the top line, and the bottom the hours' labels.
const (
	chartLeft   = 58
	chartTop    = 14
	chartHeight = 120
	barStep     = 23
	chartWidth  = chartLeft + app.CountHours*barStep + 8
)

// niceScale rounds n up to 1, 2 or 5 times a power of ten (at least 1).
func niceScale(n uint64) uint64 {
	for p := uint64(1); ; p *= 10 {
		for _, m := range []uint64{1, 2, 5} {
			if m*p >= n {
				return m * p
			}
		}
	}
}

// shortCount writes a scale of niceScale in at most 4 characters: 500,
// 2k, 500k, 1M, 20G (up to E, 10¹⁸).
func shortCount(n uint64) string {
	for _, u := range []struct {
		size   uint64
		suffix string
	}{{1e18, "E"}, {1e15, "P"}, {1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if n >= u.size && n%u.size == 0 {
			return fmt.Sprintf("%d%s", n/u.size, u.suffix)
		}
	}
	return fmt.Sprint(n)
}

// newChart draws v, hourly, oldest first, the hour of now last.
func newChart(v [app.CountHours]uint64, now time.Time) chart {
	return newStacked(v, [app.CountHours]uint64{}, now, "")
}

// newStacked draws good with bad stacked on it (bad named badName in the
// bars' labels, "" for none).
func newStacked(good, bad [app.CountHours]uint64, now time.Time, badName string) chart {
	c := chart{Width: chartWidth, Height: chartTop + chartHeight + 26, Left: chartLeft, Top: chartTop,
		Plot: chartTop + chartHeight, Bottom: chartTop + chartHeight + 20, Mid: chartTop + chartHeight/2,
		Right: chartWidth - 2, BarWidth: barStep - 3}
	for i := range good {
		c.Max = max(c.Max, good[i]+bad[i])
		c.Total += good[i]
		c.BadTotal += bad[i]
	}
	c.Scale = niceScale(c.Max)
	c.ScaleLabel = shortCount(c.Scale)
	height := func(n uint64) int {
		h := int(n * chartHeight / c.Scale)
		if n > 0 && h == 0 {
			h = 1 // a non-zero hour is never invisible
		}
		return h
	}
	for i, n := range good {
		h, bh := height(n), height(bad[i])
		hour := app.HourStart(app.Hour(now) - int64(app.CountHours-1-i))
		x := chartLeft + i*barStep
		label := fmt.Sprintf("%s–%s UTC: %d", hour.Format("15:00"), hour.Add(time.Hour).Format("15:00"), n)
		if badName != "" {
			label += fmt.Sprintf(", %d %s", bad[i], badName)
		}
		c.Bars = append(c.Bars, bar{X: x + 1, Y: c.Plot - h, H: h, BadY: c.Plot - h - bh, BadH: bh, Label: label})
		if i%6 == 0 {
			c.Ticks = append(c.Ticks, tick{X: x, Label: hour.Format("15:00"), Hour: hour})
		}
	}
	return c
}
