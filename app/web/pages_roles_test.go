package web

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"hookbox/app"
	"hookbox/ui"
)

// control is a button (a form, POST) or a link (GET) of a page template,
// with the .Can names of the {{if}}s around it.
type control struct {
	file, method, path string
	guards             []string
}

var (
	templateAction = regexp.MustCompile(`\{\{-?\s*(if|with|range|else if|else|end|define|block|template)\b([^}]*)\}\}|\{\{[^}]*\}\}|(<form[^>]*\saction="([^"]*)")|\shref="([^"]*)"`)
	canName        = regexp.MustCompile(`\.Can\.(\w+)`)
)

// pageControls reads every form and link of the page templates, with the
// .Can names that guard it ({{else}} drops the guard of its {{if}}).
func pageControls(t *testing.T) []control {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", "ui", "templates", "*.html"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no templates: %v", err)
	}
	var out []control
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src := string(b)
		var stack [][]string // the .Can names of each open block
		for _, m := range templateAction.FindAllStringSubmatchIndex(src, -1) {
			sub := func(i int) string {
				if m[2*i] < 0 {
					return ""
				}
				return src[m[2*i]:m[2*i+1]]
			}
			switch kw := sub(1); {
			case kw == "if" || kw == "with" || kw == "range" || kw == "define" || kw == "block":
				stack = append(stack, names(sub(2)))
			case kw == "else if" && len(stack) > 0:
				stack[len(stack)-1] = names(sub(2))
			case kw == "else" && len(stack) > 0:
				stack[len(stack)-1] = nil
			case kw == "end" && len(stack) > 0:
				stack = stack[:len(stack)-1]
			case sub(3) != "" || sub(5) != "":
				c := control{file: filepath.Base(f), method: "GET", path: sub(5)}
				if sub(3) != "" {
					c.path = sub(4)
					if strings.Contains(strings.ToLower(sub(3)), `method="post"`) {
						c.method = "POST"
					}
				}
				c.path = regexp.MustCompile(`\{\{[^}]*\}\}`).ReplaceAllString(c.path, ":x")
				c.path, _, _ = strings.Cut(c.path, "?")
				for _, g := range stack {
					c.guards = append(c.guards, g...)
				}
				out = append(out, c)
			}
		}
	}
	return out
}

func names(pipe string) []string {
	var out []string
	for _, m := range canName.FindAllStringSubmatch(pipe, -1) {
		out = append(out, m[1])
	}
	return out
}

// routeOf finds the registered route a control's method and path use.
func routeOf(method, path string) (string, rule, bool) {
	segs := strings.Split(path, "/")
	for key, r := range routeRules {
		m, p, _ := strings.Cut(key, " ")
		ps := strings.Split(p, "/")
		if m != method || len(ps) != len(segs) {
			continue
		}
		ok := true
		for i := range ps {
			ok = ok && (ps[i] == segs[i] || strings.HasPrefix(ps[i], ":") && segs[i] != "")
		}
		if ok {
			return key, r, true
		}
	}
	return "", rule{}, false
}

// pageOf is the action of the route that renders a template: a control
// on it is seen only by those who may do that.
var pageOf = map[string]app.Action{
	"team.html":   app.ActManageTeam,
	"audit.html":  app.ActReadAudit,
	"replay.html": app.ActReplayQuery,
}

// Every button and link of the pages follows app's table of roles: one
// to a route that not every role may use is shown only under the .Can
// name of that route's own action (or on a page only they see), so a page
// never offers a control the server would refuse, nor hides one it would
// take. Every page action is walked: each POST route of the pages is a
// form of some template.
func TestPages_ControlsFollowTheTable(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range pageControls(t) {
		if !strings.HasPrefix(c.path, "/") || strings.HasPrefix(c.path, "/static/") {
			continue
		}
		key, r, ok := routeOf(c.method, c.path)
		if !ok {
			if !publicRoutes[c.method+" "+c.path] {
				t.Errorf("%s: %s %s is no route the server registers", c.file, c.method, c.path)
			}
			continue
		}
		seen[key] = true
		need, _ := r.action.Rule()
		for _, g := range c.guards {
			if _, ok := ui.CanActions[g]; !ok {
				t.Errorf("%s: %s %s is guarded by .Can.%s, which is no action of app's table (ui.CanActions)", c.file, c.method, c.path, g)
			}
		}
		if need.Role == app.RoleViewer && !need.UserOnly {
			continue // every logged-in user may
		}
		var by []string
		for _, g := range c.guards {
			if ui.CanActions[g] == r.action {
				by = append(by, g)
			}
		}
		if page, ok := pageOf[c.file]; len(by) == 0 && !(ok && sameRule(page, r.action)) {
			t.Errorf("%s: %s %s (%s, %s) is shown under %v: want the .Can name of %q", c.file, c.method, c.path, key, need.Role, c.guards, r.action)
		}
	}
	var missing []string
	for key := range routeRules {
		if strings.HasPrefix(key, "POST /") && !strings.HasPrefix(key, "POST /api/") && !seen[key] {
			missing = append(missing, key)
		}
	}
	sort.Strings(missing)
	for _, key := range missing {
		t.Errorf("%s: no page has a form for it", key)
	}
}

// sameRule reports whether whoever may do a may do b too.
func sameRule(a, b app.Action) bool {
	ra, _ := a.Rule()
	rb, _ := b.Rule()
	return ra.Role >= rb.Role && (ra.UserOnly || !rb.UserOnly)
}
