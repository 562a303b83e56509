/*
Copyright The shardgate Authors.
*/

package autotls

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
)

func cert(status map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"status": status}}
}

func cond(typ, status, reason, msg string) map[string]any {
	return map[string]any{"type": typ, "status": status, "reason": reason, "message": msg}
}

func TestStateOf(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status map[string]any
		want   State
		failed bool
	}{
		{"nothing yet", nil, State{metav1.ConditionFalse, shardgatev1alpha1.ReasonCertificateIssuing, ""}, false},
		{"issuing", map[string]any{"conditions": []any{
			cond("Ready", "False", "DoesNotExist", "Issuing certificate as Secret does not exist"),
			cond("Issuing", "True", "DoesNotExist", "Issuing certificate as Secret does not exist")}},
			State{metav1.ConditionFalse, shardgatev1alpha1.ReasonCertificateIssuing, "Secret does not exist"}, false},
		{"issued", map[string]any{"conditions": []any{cond("Ready", "True", "Ready", "Certificate is up to date and has not expired")}},
			State{metav1.ConditionTrue, shardgatev1alpha1.ReasonCertificateIssued, "Secret shardgate-tls.x"}, false},
		{"failed", map[string]any{"lastFailureTime": "2026-11-29T08:00:00Z", "failedIssuanceAttempts": int64(1), "conditions": []any{
			cond("Ready", "False", "Failed", "The certificate request has failed to complete and will be retried"),
			cond("Issuing", "False", "Failed", "The certificate request has failed to complete and will be retried: 403 urn:ietf:params:acme:error:unauthorized")}},
			State{metav1.ConditionFalse, "Failed", "will be retried"}, true},
		{"expired", map[string]any{"conditions": []any{cond("Ready", "False", "Expired", "Certificate expired")}},
			State{metav1.ConditionFalse, "Expired", "Certificate expired"}, false},
		{"renewal failing while ready", map[string]any{"lastFailureTime": "2026-11-29T08:00:00Z", "conditions": []any{
			cond("Ready", "True", "Ready", "up to date"), cond("Issuing", "False", "Failed", "x")}},
			State{metav1.ConditionTrue, shardgatev1alpha1.ReasonCertificateIssued, ""}, false},
	} {
		s := ReadStatus(cert(tc.status))
		got := StateOf(s, "shardgate-tls.x")
		if got.Status != tc.want.Status || got.Reason != tc.want.Reason || !strings.Contains(got.Message, tc.want.Message) {
			t.Errorf("%s: StateOf = %+v, want %+v", tc.name, got, tc.want)
		}
		if s.Failed() != tc.failed {
			t.Errorf("%s: Failed = %v", tc.name, s.Failed())
		}
	}
	s := ReadStatus(cert(map[string]any{"lastFailureTime": "2026-11-29T08:00:00Z", "conditions": []any{cond("Issuing", "False", "Failed", "acme: 403")}}))
	if s.FailureMessage() != "acme: 403" || s.LastFailureTime.IsZero() {
		t.Fatalf("failure %+v", s)
	}
}
