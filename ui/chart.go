package ui

import (
	"fmt"
	"time"

	"hookbox/app"
)

// chart is an inline SVG bar chart of 24 hourly values, with a time axis
// (UTC hours) and a scale.
type chart struct {
	Bars  []bar
	Ticks []tick
	Max   uint64
	Total uint64
	Scale uint64 // the top of the value axis: Max rounded up to 1, 2 or 5 × 10ⁿ
}

type bar struct {
	X, Y, H int
	Label   string
}

// tick is a label of the time axis at X.
type tick struct {
	X     int
	Label string
}

// The chart's geometry, in SVG units: the plot starts at chartLeft (the
// value labels are left of it) and is chartHeight tall from chartTop.
const (
	chartLeft   = 34
	chartTop    = 6
	chartHeight = 70
	barStep     = 12
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

func newChart(v [app.CountHours]uint64, now time.Time) chart {
	c := chart{}
	for _, n := range v {
		c.Max = max(c.Max, n)
		c.Total += n
	}
	c.Scale = niceScale(c.Max)
	for i, n := range v {
		h := int(n * chartHeight / c.Scale)
		if n > 0 && h == 0 {
			h = 1 // a non-zero hour is never invisible
		}
		hour := now.Add(time.Duration(i-(app.CountHours-1)) * time.Hour).UTC()
		x := chartLeft + i*barStep
		c.Bars = append(c.Bars, bar{X: x + 1, Y: chartTop + chartHeight - h, H: h, Label: fmt.Sprintf("%s–%s UTC: %d", hour.Format("15:00"), hour.Add(time.Hour).Format("15:00"), n)})
		if i%6 == 0 {
			c.Ticks = append(c.Ticks, tick{X: x, Label: hour.Format("15:00")})
		}
	}
	return c
}
