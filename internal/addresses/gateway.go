package addresses

// Gateway addresses: what a Gateway asks of MetalLB through
// its Envoy Service's annotations, and how MetalLB's answer (the Service's
// status.loadBalancer and the IPAddressPools) reads back as the Gateway's
// status.addresses and Programmed reason.

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"

	metallbv1beta1 "go.universe.tf/metallb/api/v1beta1"
	corev1 "k8s.io/api/core/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
)

// Programmed reasons the Gateway gets from its addresses.
const (
	ReasonAddressNotAssigned = string(gatewayv1.GatewayReasonAddressNotAssigned)
	ReasonAddressNotUsable   = string(gatewayv1.GatewayReasonAddressNotUsable)
)

// RequestedIPs are the Gateway's spec.addresses of type IPAddress (an unset
// type means IPAddress, as the API defines) with a value that parses as an
// IP, in spec order, deduplicated, in canonical form. Other types and
// unparsable values are refused by the Gateway's Accepted condition
// (UnsupportedAddress), not here.
func RequestedIPs(gw *gatewayv1.Gateway) []netip.Addr {
	var out []netip.Addr
	seen := map[netip.Addr]bool{}
	for _, a := range gw.Spec.Addresses {
		if a.Type != nil && *a.Type != gatewayv1.IPAddressType {
			continue
		}
		ip, err := netip.ParseAddr(strings.TrimSpace(a.Value))
		if err != nil {
			continue
		}
		ip = ip.Unmap()
		if !seen[ip] {
			seen[ip] = true
			out = append(out, ip)
		}
	}
	return out
}

// EmptyIPRequests counts the Gateway's spec.addresses of type IPAddress
// (or untyped) whose value is empty: each asks for any address from the
// pool (the GatewayAddressEmpty feature). They add no loadBalancerIPs;
// MetalLB picks the address.
func EmptyIPRequests(gw *gatewayv1.Gateway) int {
	n := 0
	for _, a := range gw.Spec.Addresses {
		if (a.Type == nil || *a.Type == gatewayv1.IPAddressType) && a.Value == "" {
			n++
		}
	}
	return n
}

// PoolOf is the MetalLB IPAddressPool named by a Gateway's parameters, or
// "" for MetalLB's choice. params may be nil.
func PoolOf(params *shardgatev1alpha1.GatewayParameters) string {
	if params == nil || params.Spec.Addresses == nil {
		return ""
	}
	return strings.TrimSpace(params.Spec.Addresses.Pool)
}

// GatewayServiceAnnotations are the MetalLB annotations of a Gateway's Envoy
// Service: metallb.io/address-pool from the parameters' addresses.pool and
// metallb.io/loadBalancerIPs from the requested IPs (comma-separated, in
// spec order). The map holds only the annotations that apply; it is never
// nil.
func GatewayServiceAnnotations(gw *gatewayv1.Gateway, params *shardgatev1alpha1.GatewayParameters) map[string]string {
	out := map[string]string{}
	if p := PoolOf(params); p != "" {
		out[AnnotationAddressPool] = p
	}
	if ips := RequestedIPs(gw); len(ips) > 0 {
		s := make([]string, len(ips))
		for i, ip := range ips {
			s[i] = ip.String()
		}
		out[AnnotationLoadBalancerIPs] = strings.Join(s, ",")
	}
	return out
}

// PoolContains says whether one of pool's spec.addresses entries contains
// ip. MetalLB accepts CIDRs ("192.0.2.0/28", "2001:db8::/120") and
// inclusive ranges ("192.0.2.10-192.0.2.20", spaces around the dash
// allowed); an entry that parses as neither contains nothing.
func PoolContains(pool *metallbv1beta1.IPAddressPool, ip netip.Addr) bool {
	ip = ip.Unmap()
	for _, entry := range pool.Spec.Addresses {
		if entryContains(entry, ip) {
			return true
		}
	}
	return false
}

func entryContains(entry string, ip netip.Addr) bool {
	entry = strings.TrimSpace(entry)
	if strings.Contains(entry, "/") {
		p, err := netip.ParsePrefix(entry)
		if err != nil {
			return false
		}
		return p.Masked().Contains(ip)
	}
	lo, hi, ok := strings.Cut(entry, "-")
	if !ok {
		// A bare address is not MetalLB syntax, but it is unambiguous.
		a, err := netip.ParseAddr(entry)
		return err == nil && a.Unmap() == ip
	}
	first, err1 := netip.ParseAddr(strings.TrimSpace(lo))
	last, err2 := netip.ParseAddr(strings.TrimSpace(hi))
	if err1 != nil || err2 != nil {
		return false
	}
	first, last = first.Unmap(), last.Unmap()
	if first.BitLen() != ip.BitLen() || last.BitLen() != ip.BitLen() {
		return false
	}
	return first.Compare(ip) <= 0 && ip.Compare(last) <= 0
}

// UnusableIPs are the requested IPs that no pool can hand out. When poolName
// is set (the Gateway's addresses.pool) only the pools of that name count:
// MetalLB allocates a requested IP from the named pool only. The result
// keeps the order of requested.
func UnusableIPs(requested []netip.Addr, pools []metallbv1beta1.IPAddressPool, poolName string) []netip.Addr {
	var out []netip.Addr
	for _, ip := range requested {
		usable := false
		for i := range pools {
			if poolName != "" && pools[i].Name != poolName {
				continue
			}
			if PoolContains(&pools[i], ip) {
				usable = true
				break
			}
		}
		if !usable {
			out = append(out, ip)
		}
	}
	return out
}

// ServiceAddresses are a LoadBalancer Service's assigned addresses as
// Gateway status addresses: each ingress IP as IPAddress, each ingress
// hostname as Hostname, IPs first, each sorted, deduplicated.
func ServiceAddresses(svc *corev1.Service) []gatewayv1.GatewayStatusAddress {
	if svc == nil {
		return nil
	}
	var ips, hosts []string
	seen := map[string]bool{}
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if in.IP != "" && !seen["ip/"+in.IP] {
			seen["ip/"+in.IP] = true
			ips = append(ips, in.IP)
		}
		if in.Hostname != "" && !seen["host/"+in.Hostname] {
			seen["host/"+in.Hostname] = true
			hosts = append(hosts, in.Hostname)
		}
	}
	sort.Strings(ips)
	sort.Strings(hosts)
	var out []gatewayv1.GatewayStatusAddress
	for _, ip := range ips {
		out = append(out, gatewayv1.GatewayStatusAddress{Type: new(gatewayv1.IPAddressType), Value: ip})
	}
	for _, h := range hosts {
		out = append(out, gatewayv1.GatewayStatusAddress{Type: new(gatewayv1.HostnameAddressType), Value: h})
	}
	return out
}

// GatewayAddressState is what a Gateway's addresses say about it being
// Programmed.
type GatewayAddressState struct {
	// Addresses are the Service's assigned addresses (status.addresses).
	Addresses []gatewayv1.GatewayStatusAddress
	// Reason is "" (addresses are in place), AddressNotUsable or
	// AddressNotAssigned; Message says why.
	Reason  string
	Message string
}

// GatewayAddresses reads a Gateway's address state from its Envoy Service
// (nil: not created yet) and MetalLB's pools. checkPools is false when
// MetalLB's pools cannot be known (its CRD is not installed): no requested
// IP is then called unusable. Precedence:
//  1. a requested IP that no pool contains: AddressNotUsable, naming it;
//  2. no address assigned yet, or a requested IP not among the assigned
//     ones (MetalLB has not caught up with a change): AddressNotAssigned;
//  3. fewer IP addresses assigned than requested, counting every entry
//     with an empty value as one more address of MetalLB's choice (a
//     single-stack Service gets one address, so two empty entries, or an
//     empty one next to a fixed IP of the same family, cannot all be
//     assigned): AddressNotAssigned;
//  4. otherwise no reason.
//
// The assigned addresses are reported in every case.
func GatewayAddresses(gw *gatewayv1.Gateway, params *shardgatev1alpha1.GatewayParameters, svc *corev1.Service, pools []metallbv1beta1.IPAddressPool, checkPools bool) GatewayAddressState {
	st := GatewayAddressState{Addresses: ServiceAddresses(svc)}
	requested := RequestedIPs(gw)
	poolName := PoolOf(params)
	if checkPools {
		if bad := UnusableIPs(requested, pools, poolName); len(bad) > 0 {
			s := make([]string, len(bad))
			for i, ip := range bad {
				s[i] = ip.String()
			}
			st.Reason = ReasonAddressNotUsable
			if poolName != "" {
				st.Message = fmt.Sprintf("Requested address %s is not in IPAddressPool %q", strings.Join(s, ", "), poolName)
			} else {
				st.Message = fmt.Sprintf("Requested address %s is in no IPAddressPool", strings.Join(s, ", "))
			}
			return st
		}
	}
	if len(st.Addresses) == 0 {
		st.Reason = ReasonAddressNotAssigned
		st.Message = "No address is assigned to the Gateway's Service yet"
		return st
	}
	assigned := map[netip.Addr]bool{}
	for _, a := range st.Addresses {
		if ip, err := netip.ParseAddr(a.Value); err == nil {
			assigned[ip.Unmap()] = true
		}
	}
	for _, ip := range requested {
		if !assigned[ip] {
			st.Reason = ReasonAddressNotAssigned
			st.Message = fmt.Sprintf("Requested address %s is not assigned to the Gateway's Service yet", ip)
			return st
		}
	}
	if empty := EmptyIPRequests(gw); empty > 0 && len(assigned) < len(requested)+empty {
		st.Reason = ReasonAddressNotAssigned
		st.Message = fmt.Sprintf("%d IP addresses are requested (%d without a value) but %d is assigned to the Gateway's Service",
			len(requested)+empty, empty, len(assigned))
	}
	return st
}
