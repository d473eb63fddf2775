package bench

import (
	"net"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// The relay forwards a genuine webhook's bytes to the sink before it
// answers 200, refuses a bad signature with 401 without forwarding, and
// answers 502 when the sink is gone (it has nowhere to keep the event).
func TestBench_Relay(t *testing.T) {
	sink := newBenchSink()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sinkSrv := &fasthttp.Server{Handler: sink.handle}
	go sinkSrv.Serve(ln)
	src := benchSource(t)
	addr, stop, err := startRelay(src, 1<<20, "http://"+ln.Addr().String()+"/sink", 4, ConnLimits{})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	client := &fasthttp.Client{}
	sg := newSigner(src)
	body, h, err := sg.request("evt_relay", 256, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if code, _, err := send(client, "http://"+addr+"/in/bench", body, h); err != nil || code != 200 {
		t.Fatalf("genuine: %d, %v; want 200", code, err)
	}
	if n := sink.count(); n != 1 {
		t.Fatalf("the sink has %d events after the relay's 200, want 1", n)
	}
	bad := append([]byte(nil), body...)
	bad[len(bad)-2] ^= 1
	if code, _, err := send(client, "http://"+addr+"/in/bench", bad, h); err != nil || code != 401 {
		t.Fatalf("tampered: %d, %v; want 401", code, err)
	}
	sinkSrv.Shutdown()
	body, h, _ = sg.request("evt_relay_2", 256, time.Now())
	if code, _, err := send(client, "http://"+addr+"/in/bench", body, h); err != nil || code != 502 {
		t.Fatalf("sink gone: %d, %v; want 502", code, err)
	}
	if n := sink.count(); n != 1 {
		t.Fatalf("the sink has %d events, want still 1", n)
	}
}
