package egressd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

// How long one step toward the upstream may take, within the call's
// timeout: a machine without a network fails in seconds and says why,
// rather than wait out the call and answer a bare timeout.
const (
	defaultResolveTimeout = 5 * time.Second
	connectTimeout        = 10 * time.Second
)

// resolveFailure says why host did not resolve. The sandbox (and so the
// model) is told the reason but not the name server's address, which is
// the machine's own business; the log gets the whole error.
func resolveFailure(host string, err error, limit time.Duration) *failure {
	var dnsErr *net.DNSError
	isDNS := errors.As(err, &dnsErr)
	why := "the name could not be resolved: " + lastPart(err.Error())
	switch {
	case isDNS && dnsErr.IsNotFound:
		why = "no such host"
	case errors.Is(err, context.DeadlineExceeded) || isDNS && dnsErr.IsTimeout:
		why = fmt.Sprintf("the name server did not answer within %s (is this machine offline?)", limit)
	case isDNS:
		why = "the name server failed: " + lastPart(dnsErr.Err)
	}
	return &failure{status: http.StatusBadGateway, kind: "upstream",
		public: fmt.Sprintf("could not resolve %s: %s", host, why), detail: fmt.Sprintf("resolving %s: %v", host, err)}
}

// connectFailure says why no address of the host answered, without the
// addresses (the log has them). A stopping egressd or a refusal of the
// address rules passes through as it is.
func connectFailure(ctx context.Context, authority string, err error) error {
	var f *failure
	if errors.As(err, &f) || ctx.Err() != nil {
		return err
	}
	why := causeOf(err).Error()
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		why = fmt.Sprintf("no answer within %s (is this machine offline, or the host down?)", connectTimeout)
	}
	return &failure{status: http.StatusBadGateway, kind: "upstream",
		public: fmt.Sprintf("could not connect to %s: %s", authority, why), detail: fmt.Sprintf("connecting to %s: %v", authority, err)}
}

// causeOf is a dial error without the dialer's words around it ("dial tcp
// ADDRESS: connect:"): what the kernel or the Control hook said.
func causeOf(err error) error {
	var op *net.OpError
	if errors.As(err, &op) {
		err = op.Err
	}
	var sc *os.SyscallError
	if errors.As(err, &sc) {
		err = sc.Err
	}
	return err
}

// lastPart is the text after an error's last ": ", where Go's network
// errors put the reason after the addresses they name.
func lastPart(s string) string {
	if i := strings.LastIndex(s, ": "); i >= 0 {
		return s[i+2:]
	}
	return s
}
