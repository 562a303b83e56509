package akash

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// TestExampleLeaseNamespaces: the lease namespaces written out in
// examples/akash are the ones their lease labels name.
func TestExampleLeaseNamespaces(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "examples", "akash", "40-akash.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	checked := 0
	for {
		var u unstructured.Unstructured
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatal(err)
		}
		if u.GetKind() != "Namespace" || u.GetLabels()[LabelManaged] != "true" {
			continue
		}
		l, ok := LeaseFromLabels(u.GetLabels())
		if !ok {
			t.Fatalf("namespace %s: lease labels %v", u.GetName(), u.GetLabels())
		}
		if u.GetName() != l.Namespace() {
			t.Errorf("namespace %s is lease %s's, whose namespace is %s", u.GetName(), l, l.Namespace())
		}
		checked++
	}
	if checked != 2 {
		t.Fatalf("checked %d lease namespaces, want 2", checked)
	}
}
