// A route's routing rules: filter and transform, compiled from CEL here
// (app/rules) so that a mistake stops the load with CEL's message and
// column, and order_key, a template like key.

package config

import (
	"hookbox/app"
	"hookbox/app/rules"
)

func (v *validator) rules(key string, r rawRoute, route *app.Route) {
	if r.Filter != "" {
		f, err := rules.NewFilter(r.Filter)
		if err != nil {
			v.fail(key+".filter", err.Error())
		}
		route.Filter = f
	}
	if r.Transform != "" {
		t, err := rules.NewTransform(r.Transform)
		if err != nil {
			v.fail(key+".transform", err.Error())
		}
		route.Transform = t
	}
	route.OrderKey = v.template(key+".order_key", r.OrderKey)
}
