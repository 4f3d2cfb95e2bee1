package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
)

// usableHostPort is where a client on this machine reaches a listener bound to addr. A
// listener on every interface (0.0.0.0, [::], or an address given as ":port") is printed by Go
// as [::]:port, which is no address to connect to; 127.0.0.1 is, since Go listens dual-stack.
func usableHostPort(addr net.Addr) (hostPort string, everyInterface bool) {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok || !tcp.IP.IsUnspecified() {
		return addr.String(), false
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(tcp.Port)), true
}

// warnEveryInterface says, under the banner, that the endpoint called name listens on every
// interface, so that any machine that can reach this one can reach it, and how such a machine
// names it.
func warnEveryInterface(w io.Writer, name, scheme string, addr net.Addr) {
	if _, every := usableHostPort(addr); !every {
		return
	}
	port := strconv.Itoa(addr.(*net.TCPAddr).Port)
	from := "this host's name or address"
	if host, err := os.Hostname(); err == nil && host != "" {
		from = scheme + "://" + net.JoinHostPort(host, port)
	}
	fmt.Fprintf(w, "  WARNING: the %s endpoint listens on every interface (port %s): it is reachable from the network, as %s\n", name, port, from)
}

// sharedDataNote is the banner's line about a data directory nobody chose: every Tabula started
// without --data (or TABULA_DATA) uses it, so their data mix; tabula reset empties it.
func sharedDataNote(w io.Writer, c config) {
	if c.dataDirIsDefault && !c.inMemory && c.storeURL == "" {
		fmt.Fprintf(w, "  %s is the default data directory, shared by every Tabula started without --data; `tabula reset` empties it\n", c.dataDir)
	}
}
