/*
Copyright The shardgate Authors.
*/

package gatewayapi

import (
	"bytes"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// allObjects lists every object of in.
func allObjects(in *Input) []client.Object {
	var out []client.Object
	out = append(out, objs(in.GatewayClasses)...)
	out = append(out, objs(in.GatewayParameters)...)
	out = append(out, objs(in.Namespaces)...)
	out = append(out, objs(in.Gateways)...)
	out = append(out, objs(in.ListenerSets)...)
	out = append(out, objs(in.Secrets)...)
	out = append(out, objs(in.ConfigMaps)...)
	out = append(out, objs(in.BackendTLSPolicies)...)
	out = append(out, objs(in.ReferenceGrants)...)
	out = append(out, objs(in.Services)...)
	out = append(out, objs(in.HTTPRoutes)...)
	out = append(out, objs(in.GRPCRoutes)...)
	out = append(out, objs(in.TLSRoutes)...)
	out = append(out, objs(in.TCPRoutes)...)
	return out
}

// TestGoldenReplay replays every golden case as a sequence of events: its
// objects created one by one in a random order, then deleted in another,
// then created again in a third. After every event the Translator's output
// equals a fresh Translate of the objects the Store then holds, and after
// the last creation it renders exactly the golden file.
func TestGoldenReplay(t *testing.T) {
	files, err := filepath.Glob("testdata/*.in.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	if len(files) == 0 {
		t.Fatal("no golden cases")
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".in.yaml")
		t.Run(name, func(t *testing.T) {
			in := loadInput(t, f)
			want, err := os.ReadFile(strings.TrimSuffix(f, ".in.yaml") + ".out.yaml")
			if err != nil {
				t.Fatal(err)
			}
			h := fnv.New64a()
			h.Write([]byte(name))
			r := rand.New(rand.NewPCG(h.Sum64(), 1))
			facts := FactsOf(in)
			st := NewStore(in.ControllerName)
			tr := NewTranslator(st)
			step := func(what string, o client.Object) {
				t.Helper()
				got := tr.Translate(facts)
				fresh := Translate(st.Input(facts))
				if !sameOutput(got, fresh) {
					t.Fatalf("%s %T %s/%s: the Translator differs from Translate (stats %+v):\n%s",
						what, o, o.GetNamespace(), o.GetName(), tr.Stats, cmp.Diff(bare(fresh), bare(got)))
				}
			}
			objects := allObjects(in)
			for round := range 3 {
				order := append([]client.Object(nil), objects...)
				r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
				for _, o := range order {
					if round == 1 {
						st.Delete(o)
						step("delete", o)
					} else {
						st.Upsert(o)
						step("create", o)
					}
				}
				if round == 1 {
					if got := tr.Translate(facts); !sameOutput(got, Translate(&Input{ControllerName: in.ControllerName, Runtime: in.Runtime,
						ShardRefusals: in.ShardRefusals, TenantNamespaces: in.TenantNamespaces, Ownership: in.Ownership, TenantLimits: in.TenantLimits})) {
						t.Fatal("with every object deleted, the output is not empty")
					}
					continue
				}
				got := renderOutput(t, tr.Translate(facts), strings.HasPrefix(name, "gatewayclass-"))
				if !bytes.Equal(got, want) {
					t.Fatalf("round %d: the replayed translation differs from the golden:\n%s", round, lineDiff(string(want), string(got)))
				}
			}
		})
	}
}
