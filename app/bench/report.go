package bench

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// printResult writes what one run measured, for a reader.
func printResult(w io.Writer, r Result) {
	mode := fmt.Sprintf("closed loop, %d connections", r.Conns)
	if r.Mode == "open" {
		mode = fmt.Sprintf("open loop, %.0f requests/s scheduled, up to %d in flight", r.Rate, r.Conns)
	}
	fmt.Fprintf(w, "%s\n  %s, %d-byte bodies, %.0f%% duplicate ids\n", r.Target, mode, r.BodyBytes, 100*r.DupShare)
	fmt.Fprintf(w, "  %d requests in %.1fs: %.0f requests/s; this process used %.0f µs of CPU per request\n", r.Requests, r.Seconds, r.Throughput, r.CPUPerReqUS)
	if r.MachineCPUs > 0 {
		fmt.Fprintf(w, "  the machine's %d CPUs were %.0f%% busy: %.0f µs of machine CPU per request (the kernel's network and disk work included)\n",
			r.MachineCPUs, r.MachineBusyPct, r.MachineCPUPerReqUS)
	}
	fmt.Fprintf(w, "  latency p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, max %.2f ms\n", r.P50MS, r.P90MS, r.P99MS, r.MaxMS)
	var codes []string
	for code, n := range r.Status {
		codes = append(codes, fmt.Sprintf("%s: %d", code, n))
	}
	slices.Sort(codes)
	fmt.Fprintf(w, "  status %s; errors %d\n", strings.Join(codes, ", "), r.Errors)
	if r.Commits > 0 {
		fmt.Fprintf(w, "  storage: %d commits, %.1f writes each, %.2f pages written per accepted request\n", r.Commits, r.WritesPerCommit, r.PagesPerEvent)
	}
	if r.Backlog > 0 {
		if r.BacklogDrainSec > 0 {
			fmt.Fprintf(w, "  backlog: %d events waiting at start-up reached the sink %.1fs after start (%.0f deliveries/s) while the load above ran\n",
				r.Backlog, r.BacklogDrainSec, float64(r.Backlog)/r.BacklogDrainSec)
		} else {
			fmt.Fprintf(w, "  backlog: %d events waiting at start-up did NOT all reach the sink within 60 s of the load's end\n", r.Backlog)
		}
	}
	if r.Delivered > 0 {
		fmt.Fprintf(w, "  at the sink: %d events (%d delivered again), send→sink p50 %.1f ms, p99 %.1f ms, max %.1f ms; last one %.2fs after the load stopped\n",
			r.Delivered, r.Repeats, r.DeliveryP50MS, r.DeliveryP99MS, r.DeliveryMaxMS, r.DeliveryLagSec)
	}
}
