package server

import (
	"encoding/json"
	"net/http"
	"sort"

	"github.com/shardgate/shardgate/xds/build"
)

// GroupResources is what one Gateway's proxies are served: per type, the
// version and the resource names.
type GroupResources struct {
	Refused string                  `json:"refused,omitempty"`
	Types   map[string]TypeResource `json:"types"`
}

// TypeResource is one type of a published snapshot.
type TypeResource struct {
	Version string   `json:"version"`
	Names   []string `json:"names"`
}

// Resources lists what every Gateway's proxies are served now.
func (s *Server) Resources() map[string]GroupResources {
	s.mu.Lock()
	groups := make([]string, 0, len(s.gateways))
	refused := map[string]string{}
	for g, st := range s.gateways {
		if st.published != nil {
			groups = append(groups, g)
		}
		if st.refused != "" {
			refused[g] = st.refused
		}
	}
	s.mu.Unlock()
	out := map[string]GroupResources{}
	for _, g := range groups {
		snap, err := s.cache.GetSnapshot(g)
		if err != nil {
			continue
		}
		gr := GroupResources{Refused: refused[g], Types: map[string]TypeResource{}}
		for _, typ := range build.TypeOrder {
			var names []string
			for name := range snap.GetResources(typ) {
				names = append(names, name)
			}
			sort.Strings(names)
			gr.Types[shortType(typ)] = TypeResource{Version: snap.GetVersion(typ), Names: names}
		}
		out[g] = gr
	}
	return out
}

// DebugHandler serves Resources as JSON (read-only; mounted on the metrics
// server at /debug/xds).
func (s *Server) DebugHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(s.Resources())
	})
}
