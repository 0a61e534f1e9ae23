package webhook

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
)

// errDestinationDenied is returned by the dial guard when the address a
// webhook host resolved to is in a denied range; Deliver maps it to a
// Permanent "destination_denied" outcome.
var errDestinationDenied = errors.New("destination denied")

// reservedPrefixes are the ranges denied by default besides those netip
// names (loopback, private, link-local, unspecified, multicast): addresses
// that are never a public webhook receiver but often reach something inside
// the network herald runs in.
var reservedPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),   // carrier-grade NAT, cloud internals
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),    // TEST-NET-1
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("198.51.100.0/24"), // TEST-NET-2
	netip.MustParsePrefix("203.0.113.0/24"),  // TEST-NET-3
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, and broadcast
	netip.MustParsePrefix("fec0::/10"),       // deprecated site-local
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
}

// nat64Prefix embeds an IPv4 address in its last 32 bits; the embedded
// address is checked too, so a NAT64 gateway cannot be used to reach a
// private IPv4 host.
var nat64Prefix = netip.MustParsePrefix("64:ff9b::/96")

// guard decides which resolved addresses a webhook may connect to.
type guard struct {
	allowPrivate bool
	allowHosts   map[string]bool
	denyPrefixes []netip.Prefix
}

func newGuard(allowPrivate bool, allowHosts, denyCIDRs []string) (*guard, error) {
	g := &guard{allowPrivate: allowPrivate, allowHosts: make(map[string]bool, len(allowHosts))}
	for i, h := range allowHosts {
		h = normalizeHost(h)
		if h == "" {
			return nil, fmt.Errorf("AllowHosts[%d] must not be empty", i)
		}
		g.allowHosts[h] = true
	}
	for i, c := range denyCIDRs {
		p, err := netip.ParsePrefix(strings.TrimSpace(c))
		if err != nil {
			return nil, fmt.Errorf("DenyCIDRs[%d] must be a CIDR such as 10.1.0.0/16: %w", i, err)
		}
		g.denyPrefixes = append(g.denyPrefixes, p.Masked())
	}
	return g, nil
}

// normalizeHost lower-cases a host name and strips IPv6 brackets and a
// trailing dot, so "Hooks.Example.COM." and "hooks.example.com" match.
func normalizeHost(h string) string {
	h = strings.TrimSpace(strings.ToLower(h))
	h = strings.TrimPrefix(h, "[")
	h = strings.TrimSuffix(h, "]")
	return strings.TrimSuffix(h, ".")
}

// control returns a net.Dialer Control function for a dial to host. It runs
// after name resolution, on the address actually being connected to, and
// before any packet is sent, so a host name that resolves (or re-resolves,
// as in DNS rebinding) to a denied address is caught.
func (g *guard) control(host string) func(network, address string, c syscall.RawConn) error {
	allowed := g.allowHosts[normalizeHost(host)]
	return func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("%w: unparsable address", errDestinationDenied)
		}
		if reason := g.denied(ap.Addr(), allowed); reason != "" {
			return fmt.Errorf("%w: %s address", errDestinationDenied, reason)
		}
		return nil
	}
}

// denied returns why ip may not be connected to, or "" if it may.
// DenyCIDRs always apply; the built-in ranges apply unless AllowPrivate is
// set or the host was allow-listed.
func (g *guard) denied(ip netip.Addr, hostAllowed bool) string {
	ip = ip.Unmap().WithZone("")
	for _, p := range g.denyPrefixes {
		if p.Contains(ip) {
			return "deny-listed"
		}
	}
	if g.allowPrivate || hostAllowed {
		return ""
	}
	return reservedReason(ip)
}

// reservedReason names the non-public range ip is in, or returns "".
func reservedReason(ip netip.Addr) string {
	switch {
	case !ip.IsValid():
		return "invalid"
	case ip.IsLoopback():
		return "loopback"
	case ip.IsPrivate():
		return "private"
	case ip.IsLinkLocalUnicast():
		return "link-local"
	case ip.IsUnspecified():
		return "unspecified"
	case ip.IsMulticast(), ip.IsLinkLocalMulticast(), ip.IsInterfaceLocalMulticast():
		return "multicast"
	}
	if nat64Prefix.Contains(ip) {
		b := ip.As16()
		if r := reservedReason(netip.AddrFrom4([4]byte(b[12:16]))); r != "" {
			return r + " (via NAT64)"
		}
		return ""
	}
	for _, p := range reservedPrefixes {
		if p.Contains(ip) {
			return "reserved"
		}
	}
	return ""
}

// isDenied reports whether err came from the dial guard.
func isDenied(err error) bool {
	return errors.Is(err, errDestinationDenied)
}

// deniedReason extracts the guard's reason from err for the outcome's
// message.
func deniedReason(err error) string {
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Err != nil {
		return opErr.Err.Error()
	}
	return errDestinationDenied.Error()
}
