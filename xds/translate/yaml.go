/*
Copyright The shardgate Authors.
*/

package translate

import (
	"bytes"
	"encoding/json"
	"fmt"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/yaml"
)

// YAML renders r as one YAML document with the sections listeners, routes,
// clusters and secrets, for golden files and debugging dumps.
//
// protojson deliberately varies its whitespace between builds, so its
// output is decoded and re-encoded: keys come out sorted, and the text
// depends only on the protos.
func (r *Resources) YAML() ([]byte, error) {
	var buf bytes.Buffer
	sections := []struct {
		name string
		msgs []proto.Message
	}{
		{"listeners", messages(r.Listeners)},
		{"routes", messages(r.Routes)},
		{"clusters", messages(r.Clusters)},
		{"secrets", messages(r.Secrets)},
	}
	opts := protojson.MarshalOptions{UseProtoNames: true}
	for _, s := range sections {
		if len(s.msgs) == 0 {
			fmt.Fprintf(&buf, "%s: []\n", s.name)
			continue
		}
		list := make([]any, 0, len(s.msgs))
		for _, m := range s.msgs {
			j, err := opts.Marshal(m)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", s.name, err)
			}
			var v any
			if err := json.Unmarshal(j, &v); err != nil {
				return nil, fmt.Errorf("%s: %w", s.name, err)
			}
			list = append(list, v)
		}
		y, err := yaml.Marshal(list)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.name, err)
		}
		fmt.Fprintf(&buf, "%s:\n", s.name)
		buf.Write(y)
	}
	return buf.Bytes(), nil
}

func messages[M proto.Message](ms []M) []proto.Message {
	out := make([]proto.Message, len(ms))
	for i, m := range ms {
		out[i] = m
	}
	return out
}
