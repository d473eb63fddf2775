// Package rules compiles the routing rules of a [[route]] (filter and
// transform) from the Common Expression Language, cel.dev/cel-go, into
// the domain's app.Filter and app.Transform.
//
// One environment serves every expression: the variables body, headers,
// topic, source and id, the strings extension, optional values, and
// numeric comparisons across int, uint and double. Each expression is
// parsed and type-checked once, at config load; evaluation is bounded by
// a cost limit rather than a clock, so the same event costs the same
// wherever it runs, and cannot spin.
package rules

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/cost"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/ext"
	"cel.dev/cel-go/interpreter"

	"hookbox/app"
)

// CostLimit bounds one evaluation, in CEL's cost units (about one per
// operation; a string or list operation costs in proportion to its
// size). A filter that reads ten fields costs under a hundred, a
// line_items.exists(...) over 250 items under a thousand; an expression
// that reaches the limit (a loop in a loop in a loop over a list of a
// thousand) stops after 6-10 ms of CPU on the 2-core dev machine, under
// load: the most one event can cost one route.
const CostLimit = 100_000

// The parser's limits: an expression longer or deeper than this is a
// config error, not a slow load.
const (
	maxExprLen   = 16 << 10
	maxRecursion = 64
	// maxRegexProgram bounds a compiled regular expression (RE2 program
	// instructions): ample for any pattern a person writes.
	maxRegexProgram = 4096
)

var (
	envOnce sync.Once
	env     *cel.Env
	envErr  error
)

// environment is the one cel.Env of every rule, built on first use.
func environment() (*cel.Env, error) {
	envOnce.Do(func() {
		env, envErr = cel.NewEnv(
			cel.Variable("body", cel.DynType),
			cel.Variable("headers", cel.MapType(cel.StringType, cel.StringType)),
			cel.Variable("topic", cel.StringType),
			cel.Variable("source", cel.StringType),
			cel.Variable("id", cel.StringType),
			ext.Strings(),
			cel.OptionalTypes(),
			cel.CrossTypeNumericComparisons(true),
			cel.ParserExpressionSizeLimit(maxExprLen),
			cel.ParserRecursionLimit(maxRecursion),
			// A pattern from the body (body.a.matches(body.re)) is compiled
			// per event: RE2 runs in linear time, but a 1 MB pattern would
			// still cost its compile; this bounds it.
			cel.RegexProgramSizeLimit(maxRegexProgram),
		)
	})
	return env, envErr
}

// compile parses and checks expr, then plans it with the cost limit.
// what names the key ("filter", "transform") for the error about its type.
func compile(expr string, ok func(*cel.Type) bool, what, want string) (cel.Program, error) {
	if strings.TrimSpace(expr) == "" {
		return nil, errors.New("is empty")
	}
	if len(expr) > maxExprLen {
		return nil, fmt.Errorf("is longer than %d bytes", maxExprLen)
	}
	e, err := environment()
	if err != nil {
		return nil, fmt.Errorf("cel environment: %w", err)
	}
	ast, iss := e.Compile(expr)
	if iss != nil && iss.Err() != nil {
		return nil, issuesError(iss)
	}
	if t := ast.OutputType(); !ok(t) {
		return nil, fmt.Errorf("a %s must give %s; this expression gives %s", what, want, t)
	}
	// CEL's estimate of the worst cost, sizes of the body unknown (so as
	// large as can be): an expression whose worst case is within the
	// limit needs no tracking at run time, which would cost it a third.
	// Loops over the body and string functions of its values have no
	// bound here and are tracked.
	var opts []cel.ProgramOption
	if est, err := e.EstimateCost(ast, noHints{}); err != nil || est.Max > CostLimit {
		opts = append(opts, cel.CostLimit(CostLimit))
	}
	prg, err := e.Program(ast, opts...)
	if err != nil {
		return nil, fmt.Errorf("cel: %w", err)
	}
	return prg, nil
}

// noHints leaves every size and call to CEL's own estimate.
type noHints struct{}

func (noHints) EstimateSize(cost.AstNode) *cost.SizeEstimate { return nil }
func (noHints) EstimateCallCost(string, string, *cost.AstNode, []cost.AstNode) *cost.CallEstimate {
	return nil
}

// issuesError is every problem CEL found, each as line:column: message.
func issuesError(iss *cel.Issues) error {
	var msgs []string
	for _, e := range iss.Errors() {
		msgs = append(msgs, fmt.Sprintf("%d:%d: %s", e.Location.Line(), e.Location.Column()+1, e.Message))
	}
	if len(msgs) == 0 {
		return errors.New(iss.String())
	}
	return errors.New(strings.Join(msgs, "; "))
}

// evalError makes an evaluation error short and readable: "no such key:
// amount", "cost limit exceeded".
func evalError(err error) error {
	var ec interpreter.EvalCancelledError
	if errors.As(err, &ec) && ec.Cause == interpreter.CostLimitExceeded {
		return fmt.Errorf("cost limit exceeded (%d)", CostLimit)
	}
	msg := err.Error()
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	return errors.New(msg)
}

// Filter is a compiled filter: a bool CEL expression.
type Filter struct {
	expr string
	prg  cel.Program
}

var _ app.Filter = (*Filter)(nil)

// NewFilter compiles expr, which must be of type bool. The error carries
// CEL's message with line:column.
func NewFilter(expr string) (app.Filter, error) {
	prg, err := compile(expr, func(t *cel.Type) bool { return t.IsExactType(cel.BoolType) },
		"filter", "a bool")
	if err != nil {
		return nil, err
	}
	return &Filter{expr: expr, prg: prg}, nil
}

// Match implements app.Filter. An error (no such key, a wrong type, the
// cost limit) says why it could not decide; the route does not take in.
func (f *Filter) Match(in *app.RuleInput) (bool, error) {
	out, _, err := f.prg.Eval(activation(in))
	if err != nil {
		return false, evalError(err)
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, fmt.Errorf("gave %s, not a bool", out.Type().TypeName())
	}
	return bool(b), nil
}

// String implements app.Filter.
func (f *Filter) String() string { return f.expr }

// Transform is a compiled transform: a CEL expression that gives a map
// or a list (sent as JSON) or a string (sent as is).
type Transform struct {
	expr string
	prg  cel.Program
}

var _ app.Transform = (*Transform)(nil)

// NewTransform compiles expr, which must be a map, a list, a string, or
// dyn (checked when it runs).
func NewTransform(expr string) (app.Transform, error) {
	prg, err := compile(expr, func(t *cel.Type) bool {
		switch t.Kind() {
		case types.MapKind, types.ListKind, types.StringKind, types.DynKind:
			return true
		}
		return false
	}, "transform", "a map or a list (sent as JSON) or a string (sent as is)")
	if err != nil {
		return nil, err
	}
	return &Transform{expr: expr, prg: prg}, nil
}

// The Content-Types of a transformed body.
const (
	ContentTypeJSON = "application/json"
	ContentTypeText = "text/plain; charset=utf-8"
)

// Apply implements app.Transform. max bounds the body (0: no bound).
func (t *Transform) Apply(in *app.RuleInput, max int) ([]byte, string, error) {
	out, _, err := t.prg.Eval(activation(in))
	if err != nil {
		return nil, "", fmt.Errorf("transform: %w", evalError(err))
	}
	if s, ok := out.(types.String); ok {
		if max > 0 && len(s) > max {
			return nil, "", fmt.Errorf("transform: body over %d bytes", max)
		}
		return []byte(s), ContentTypeText, nil
	}
	switch out.Type() {
	case types.MapType, types.ListType:
	default:
		return nil, "", fmt.Errorf("transform: gave %s, not a map, list or string", out.Type().TypeName())
	}
	w := jsonWriter{max: max}
	if err := w.value(out, 0); err != nil {
		return nil, "", fmt.Errorf("transform: %w", err)
	}
	return w.b, ContentTypeJSON, nil
}

// String implements app.Transform.
func (t *Transform) String() string { return t.expr }

var _ ref.Val = (*object)(nil)
