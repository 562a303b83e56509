// Package translatelimit decides when the Gateway API translation may run:
// at once for a change after a quiet spell, and at most about once per
// Interval during a sustained burst, whose changes are folded into each
// translation. It sits with the controller's work queue: the event handler
// asks Wait how long to delay the one key, the worker asks Take whether a
// translation may start now and reports its end with Done.
//
// It holds only its own clock-driven state, never talks to the apiserver
// and imports nothing of the project.
package translatelimit
