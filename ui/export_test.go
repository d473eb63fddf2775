package ui

// IndentJSON and the page's bounds, for the black-box tests.
var IndentJSON = indentJSON

const (
	MaxIndentIn    = maxIndentIn
	MaxIndentDepth = maxIndentDepth
	MaxIndentOut   = maxIndentOut
	MaxRawShown    = maxRawShown
)

// ViewBody is viewBody with its answer as plain values.
func ViewBody(body []byte) (text string, pretty, cut bool, why string) {
	v := viewBody(body)
	return v.Text, v.Pretty, v.Cut, v.Why
}
