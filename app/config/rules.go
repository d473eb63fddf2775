// A route's routing rules: filter and transform, compiled from CEL here
// (app/rules) so that a mistake stops the load with CEL's message and
// column, and order_key, a template like key. Unlike the other keys,
// every rule is compiled whatever failed before, and all their mistakes
// are reported at once: expressions are where a config has several.

package config

import (
	"errors"

	"hookbox/app"
	"hookbox/app/rules"
)

func (v *validator) rules(key string, r rawRoute, route *app.Route) {
	if r.Filter != "" {
		f, err := rules.NewFilter(r.Filter)
		if err != nil {
			v.ruleFail(key+".filter", err.Error())
		}
		route.Filter = f
	}
	if r.Transform != "" {
		t, err := rules.NewTransform(r.Transform)
		if err != nil {
			v.ruleFail(key+".transform", err.Error())
		}
		route.Transform = t
	}
	route.OrderKey = v.template(key+".order_key", r.OrderKey)
}

func (v *validator) ruleFail(key, reason string) {
	v.ruleErrs = append(v.ruleErrs, &app.ConfigError{File: v.file, Key: key, Reason: reason})
}

// result is the load's error: the first mistake of the other keys and
// every rule's; a single one as the *app.ConfigError it is, several
// joined, one line each.
func (v *validator) result() error {
	var errs []error
	if v.err != nil {
		errs = append(errs, v.err)
	}
	errs = append(errs, v.ruleErrs...)
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	return errors.Join(errs...)
}
