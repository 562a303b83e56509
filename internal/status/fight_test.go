package status

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/internal/gatewayapi"
)

// The restore back-off: the first restore is at once, then 1 s, 2 s, 4 s,
// up to the cap; a new desired status, or a long quiet spell, starts over.
func TestRestoreDelays(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w := New(nil, nil, ours, logr.Discard())
	w.now = func() time.Time { return now }
	k := Key{Kind: KindHTTPRoute, NamespacedName: types.NamespacedName{Namespace: "ns", Name: "r"}}
	delay := func(restoring bool) time.Duration {
		d := w.restoreDelays([]Key{k}, restoring)
		if d == nil {
			return 0
		}
		return d[0]
	}
	if d := delay(false); d != 0 {
		t.Fatalf("no fight yet: delay %s", d)
	}
	want := []time.Duration{0, time.Second, 2 * time.Second, 4 * time.Second}
	for i, wd := range want {
		if d := delay(true); d != wd {
			t.Errorf("restore %d: delay %s, want %s", i+1, d, wd)
		}
	}
	if d := delay(false); d != 8*time.Second {
		t.Errorf("a write found by a translation while fighting: delay %s, want 8s", d)
	}
	for range 30 {
		delay(true)
	}
	if d := delay(true); d != maxRestoreBackoff {
		t.Errorf("after many restores: delay %s, want the cap %s", d, maxRestoreBackoff)
	}

	// The same desired status in a new translation keeps the back-off.
	w.routes = []gatewayapi.RouteStatuses{gatewayapi.RouteStatuses{}.Set(k.NamespacedName, []gatewayv1.RouteParentStatus{{ParentRef: gatewayv1.ParentReference{Name: "gw"}}})}
	w.forgiveFights(&gatewayapi.Output{HTTPRouteStatus: gatewayapi.RouteStatuses{}.Set(k.NamespacedName, []gatewayv1.RouteParentStatus{{ParentRef: gatewayv1.ParentReference{Name: "gw"}}})})
	if d := delay(false); d != maxRestoreBackoff {
		t.Errorf("same desired status: delay %s, want the back-off kept", d)
	}
	// A changed desired status is answered at once.
	w.forgiveFights(&gatewayapi.Output{HTTPRouteStatus: gatewayapi.RouteStatuses{}.Set(k.NamespacedName, []gatewayv1.RouteParentStatus{{ParentRef: gatewayv1.ParentReference{Name: "other"}}})})
	if d := delay(false); d != 0 {
		t.Errorf("changed desired status: delay %s, want 0", d)
	}
	// A long quiet spell forgets the fight.
	for range 5 {
		delay(true)
	}
	now = now.Add(fightMemory + time.Second)
	if d := delay(true); d != 0 {
		t.Errorf("after %s of quiet: delay %s, want 0", fightMemory, d)
	}
}

// While routes are arriving, at most floodWriters writes are in flight;
// once they stop arriving, writes are not held.
func TestFloodSlots(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w := New(nil, nil, ours, logr.Discard())
	w.now = func() time.Time { return now }
	w.lastRoutes = now
	ctx, cancel := context.WithCancel(context.Background())
	var releases []func()
	for range floodWriters {
		releases = append(releases, w.floodSlot(ctx))
	}
	if len(w.floodSlots) != floodWriters {
		t.Fatalf("%d slots taken, want %d", len(w.floodSlots), floodWriters)
	}
	// One more waits; a cancelled context lets it go without a slot.
	got := make(chan func())
	go func() { got <- w.floodSlot(ctx) }()
	select {
	case <-got:
		t.Fatal("a write beyond floodWriters went ahead during a flood")
	default:
	}
	cancel()
	(<-got)()
	for _, r := range releases {
		r()
	}
	if len(w.floodSlots) != 0 {
		t.Errorf("%d slots still taken after release", len(w.floodSlots))
	}
	now = now.Add(floodQuiet)
	for range 2 * floodWriters {
		w.floodSlot(context.Background())
	}
	if len(w.floodSlots) != 0 {
		t.Errorf("writes after the flood took slots")
	}
}

// During a sustained burst of changes (BurstHold), writes wait for the
// flood to end, for at most floodHold from the burst's start, then go one
// at a time; once the flood ends they go ahead, all of them.
func TestFloodWaitsForABurst(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w := New(nil, nil, ours, logr.Discard())
	w.now = func() time.Time { return now }
	check := func(when string, wantWait time.Duration, wantSlot bool) {
		t.Helper()
		if wait, slot := w.floodWait(); wait != wantWait || slot != wantSlot {
			t.Errorf("%s: wait %s, slot %t; want %s, %t", when, wait, slot, wantWait, wantSlot)
		}
	}
	check("no route queued yet", 0, false)
	// Routes queued, no burst said: one writer at a time, at once.
	w.lastRoutes = now
	check("routes arriving, no burst", 0, true)
	// The translations say a burst, begun now, 200 ms between them:
	// the write waits for the flood's end, the next translation plus
	// floodQuiet.
	const hold = 200 * time.Millisecond
	began := now
	w.BurstHold(hold, began)
	check("burst", hold+floodQuiet, false)
	// The burst goes on, translation after translation.
	for range int(floodHold / hold) {
		if wait, slot := w.floodWait(); wait <= 0 || slot {
			t.Fatalf("%s into the burst: wait %s, slot %t; want to wait for its end", now.Sub(began), wait, slot)
		}
		now = now.Add(hold)
		w.lastRoutes = now
		w.BurstHold(hold, began)
	}
	check("burst lasting floodHold", 0, true)
	// The flood ends: no more routes queued, the hold over.
	now = now.Add(hold + floodQuiet)
	check("after the flood", 0, false)
	// A new burst: near its floodHold, the wait is cut at floodHold.
	began = now
	w.lastRoutes = now
	w.BurstHold(hold, began)
	check("a new burst", hold+floodQuiet, false)
	now = now.Add(floodHold - 100*time.Millisecond)
	w.lastRoutes = now
	check("100 ms before floodHold", 100*time.Millisecond, false)
	// No burst said: one writer at a time again.
	w.BurstHold(0, time.Time{})
	check("burst over, routes arriving", 0, true)
}

// TestRecheckOfOurOwnWriteIsNoFight: an update that carries the version
// our last write made (or may have: a write in flight), and differs from
// the desired status only because that moved on since, is queued like any
// difference but counts no restore; so does an update that did not touch
// the status; a status someone else wrote counts one.
func TestRecheckOfOurOwnWriteIsNoFight(t *testing.T) {
	w := New(nil, nil, ours, logr.Discard())
	nn := types.NamespacedName{Namespace: "ns", Name: "r"}
	k := Key{Kind: KindHTTPRoute, NamespacedName: nn}
	accepted := func(msg string) []gatewayv1.RouteParentStatus {
		return []gatewayv1.RouteParentStatus{{
			ParentRef:      gatewayv1.ParentReference{Name: "gw"},
			ControllerName: ours,
			Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted",
				Message: msg, ObservedGeneration: 1}},
		}}
	}
	route := func(rv, msg string) *gatewayv1.HTTPRoute {
		r := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: nn.Namespace, Name: nn.Name, ResourceVersion: rv, Generation: 1}}
		r.Status.Parents = accepted(msg)
		return r
	}
	w.submitted = true
	w.routes = []gatewayapi.RouteStatuses{gatewayapi.RouteStatuses{}.Set(nn, accepted("second"))}
	w.recordWrite(k, "5") // our write of "first" made version 5

	w.Recheck(route("5", "first"))
	if w.queue.Len() != 1 {
		t.Fatalf("our own outdated write landing: %d queued, want 1", w.queue.Len())
	}
	if _, ok := w.fights[k]; ok {
		t.Fatal("our own write landing counted as a fight")
	}
	// Our next write is in flight; its version is not known yet: the
	// update may be it landing before its answer.
	w.writing[k] = nil
	w.Recheck(route("6", "first"))
	if _, ok := w.fights[k]; ok {
		t.Fatal("an update while our write is in flight counted as a fight")
	}
	w.recordWrite(k, "6")
	if _, flying := w.writing[k]; flying {
		t.Fatal("the write's answer did not end its flight")
	}
	// An update that leaves the status as it was (a label, say) while
	// our write of the desired status is still to come: no fight either.
	labelled := route("6", "first")
	labelled.ResourceVersion, labelled.Labels = "8", map[string]string{"k": "v"}
	w.RecheckUpdate(route("6", "first"), labelled)
	if _, ok := w.fights[k]; ok {
		t.Fatal("an update that did not touch the status counted as a fight")
	}
	w.RecheckUpdate(labelled, route("9", "someone else's"))
	if f := w.fights[k]; f.n != 1 {
		t.Fatalf("an update that changed the status: %d restores counted, want 1", f.n)
	}
	delete(w.fights, k)
	w.Recheck(route("7", "someone else's"))
	if f := w.fights[k]; f.n != 1 {
		t.Fatalf("a version someone else wrote: %d restores counted, want 1", f.n)
	}
}

// TestUpdateDuringOurWriteIsJudgedByItsAnswer: an update that changes the
// status while our write of it is in flight may be that write landing
// before its answer, or someone else's write; the answer's version tells
// which. Someone else's counts as a restore, as it would outside a
// flight, and is answered after the fight's back-off; our own counts
// none; a write that failed made no version, so every such update was
// someone else's.
func TestUpdateDuringOurWriteIsJudgedByItsAnswer(t *testing.T) {
	w := New(nil, nil, ours, logr.Discard())
	nn := types.NamespacedName{Namespace: "ns", Name: "r"}
	k := Key{Kind: KindHTTPRoute, NamespacedName: nn}
	route := func(rv, msg string) *gatewayv1.HTTPRoute {
		r := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: nn.Namespace, Name: nn.Name, ResourceVersion: rv, Generation: 1}}
		r.Status.Parents = []gatewayv1.RouteParentStatus{{
			ParentRef:      gatewayv1.ParentReference{Name: "gw"},
			ControllerName: ours,
			Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted",
				Message: msg, ObservedGeneration: 1}},
		}}
		return r
	}
	w.submitted = true
	w.routes = []gatewayapi.RouteStatuses{gatewayapi.RouteStatuses{}.Set(nn, route("", "ours").Status.Parents)}
	restores := func() int { return w.fights[k].n }
	// drain takes what is ready in the queue, as a worker would.
	drain := func() int {
		n := w.queue.Len()
		for range n {
			got, _ := w.queue.Get()
			w.queue.Done(got)
		}
		return n
	}

	// flight runs one write of ours: the updates land during it, and its
	// answer gives version rv ("": the write failed).
	flight := func(rv string, updates ...*gatewayv1.HTTPRoute) {
		w.writing[k] = nil
		for _, u := range updates {
			w.Recheck(u)
		}
		if rv == "" {
			w.endWrite(k, "", false)
		} else {
			w.recordWrite(k, rv)
		}
	}
	// expect checks the restores counted so far and what is ready in
	// the queue, which it empties.
	expect := func(what string, wantRestores, wantQueued int) {
		t.Helper()
		if got := restores(); got != wantRestores {
			t.Fatalf("%s: %d restores counted, want %d", what, got, wantRestores)
		}
		if got := drain(); got != wantQueued {
			t.Fatalf("%s: %d queued at once, want %d", what, got, wantQueued)
		}
	}

	// Someone else's write lands before our write's answer: nothing is
	// judged until the answer comes.
	w.writing[k] = nil
	w.Recheck(route("5", "theirs 1"))
	if restores() != 0 || w.queue.Len() != 0 {
		t.Fatalf("judged before the write's answer: %d restores, %d queued", restores(), w.queue.Len())
	}
	w.recordWrite(k, "4")
	expect("someone else's version during our write", 1, 1)

	// Again, during the restore's own flight: the second restore waits
	// for the back-off.
	flight("6", route("7", "theirs 2"))
	expect("the second overwrite during our write", 2, 0)

	// Our own write landing before its answer, after the desired status
	// moved on: queued at once, no restore.
	w.routes = []gatewayapi.RouteStatuses{gatewayapi.RouteStatuses{}.Set(nn, route("", "ours, new").Status.Parents)}
	delete(w.fights, k)
	flight("9", route("9", "ours"))
	expect("our own outdated write landing during its flight", 0, 1)

	// Ours and someone else's both land in one flight: one restore.
	flight("11", route("11", "ours"), route("12", "theirs 3"))
	expect("ours and theirs in one flight", 1, 1)

	// A write that failed (a conflict, say) made no version: every
	// update during it was someone else's.
	delete(w.fights, k)
	flight("", route("14", "theirs 4"))
	expect("an update during a failed write", 1, 1)
	if len(w.writing) != 0 {
		t.Fatalf("the failed write's flight did not end: %v", w.writing)
	}
}
