package manager

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
)

// startBackoff paces start-up attempts: 0.5 s, doubling, at most 30 s
// apart, with jitter so that the replicas of a Deployment do not retry in
// step.
func startBackoff() wait.Backoff {
	return wait.Backoff{Duration: 500 * time.Millisecond, Factor: 2, Jitter: 0.2, Steps: 1 << 30, Cap: 30 * time.Second}
}

// untilStarted runs attempt until it succeeds or ctx ends. The start-up
// needs the apiserver (the xDS CA lives in a Secret of the leader-election
// namespace); when it is unreachable, or the namespace does not exist yet,
// the process stays up, not ready, and logs one line per attempt saying
// what it waits for, instead of exiting into a crash loop.
func (p *process) untilStarted(ctx context.Context, attempt func(context.Context) error) error {
	b := startBackoff()
	for n := 1; ; n++ {
		err := attempt(ctx)
		if err == nil {
			if n > 1 {
				p.log.Info("start-up: the apiserver answered; starting", "attempts", n)
			}
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !retriable(err) {
			return err
		}
		delay := b.Step()
		p.log.Info("start-up: waiting; retrying", "reason", startHint(err, p.cfg.LeaderElection.Namespace, p.opts.RestConfig.Host),
			"attempt", n, "retryIn", delay.Round(time.Millisecond).String(), "error", err.Error())
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
	}
}

// retriable: errors that another attempt may not have. A bad certificate
// or key file of the config is not one of them.
func retriable(err error) bool {
	var netErr net.Error
	var urlErr *url.Error
	var status apierrors.APIStatus
	return errors.As(err, &netErr) || errors.As(err, &urlErr) || errors.As(err, &status) || errors.Is(err, errAkashCRDs)
}

// startHint says, in one phrase, what start-up waits for.
func startHint(err error, namespace, host string) string {
	switch {
	case errors.Is(err, errAkashCRDs):
		return err.Error()
	case apierrors.IsNotFound(err):
		return fmt.Sprintf("namespace %s does not exist: create it, or set leaderElection.namespace", namespace)
	case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
		return fmt.Sprintf("the apiserver refuses this identity access to Secrets in namespace %s: check its RBAC", namespace)
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return "the apiserver answered with an error"
	}
	return "cannot reach the apiserver at " + host
}
