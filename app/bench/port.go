package bench

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
)

// PickPort returns a port that was free a moment ago on 127.0.0.1, so that
// a config can name both listen and public_url before the server starts.
// It is picked below the kernel's ephemeral range: a port from
// 127.0.0.1:0 comes out of that range, where any outgoing connection (the
// load's, the sink's, another program's) may take it before hookbox binds
// it, and once in CI one did. Below the range only an explicit bind takes
// a port.
func PickPort() (int, error) {
	const lowest = 10000
	if top := ephemeralLow(); top > lowest {
		for range 200 {
			port := lowest + rand.IntN(top-lowest)
			ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
			if err == nil {
				ln.Close()
				return port, nil
			}
		}
	}
	// No room below the range on this machine: take one from it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// ephemeralLow is the first port of the range the kernel hands to outgoing
// connections and to listeners on port 0; 32768, Linux's default, when the
// kernel does not say.
func ephemeralLow() int {
	var low int
	if raw, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if _, err := fmt.Sscan(string(raw), &low); err == nil {
			return low
		}
	}
	return 32768
}
