/*
Copyright The shardgate Authors.
*/

package gatewayapi

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportsNoKubernetesClient keeps doc.go true: the translator, with
// everything it imports, never links a Kubernetes client.
func TestImportsNoKubernetesClient(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps listed %d packages, want the package and its imports: %q", len(deps), deps)
	}
	for _, d := range deps {
		for _, banned := range []string{"sigs.k8s.io/controller-runtime", "k8s.io/client-go"} {
			if d == banned || strings.HasPrefix(d, banned+"/") {
				t.Errorf("internal/gatewayapi depends on %s", d)
			}
		}
	}
}
