/*
Copyright The shardgate Authors.
*/

package autotls

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	shardgatev1alpha1 "github.com/shardgate/shardgate/api/v1alpha1"
)

// State is a name's CertificateReady condition, as the certificate
// controller sees it.
type State struct {
	Status  metav1.ConditionStatus
	Reason  string
	Message string
}

// Condition is s as a CertificateReady condition of generation gen.
func (s State) Condition(gen int64) metav1.Condition {
	return metav1.Condition{Type: shardgatev1alpha1.ConditionCertificateReady, Status: s.Status,
		Reason: s.Reason, Message: s.Message, ObservedGeneration: gen}
}

// CertCondition is one condition of a cert-manager Certificate.
type CertCondition struct {
	Status  string
	Reason  string
	Message string
}

// CertificateStatus is what shardgate reads of a Certificate's status.
type CertificateStatus struct {
	Ready   *CertCondition
	Issuing *CertCondition
	// LastFailureTime and FailedIssuanceAttempts are cert-manager's record
	// of failed issuance (zero: none).
	LastFailureTime        time.Time
	FailedIssuanceAttempts int64
}

// ReadStatus reads a cert-manager.io/v1 Certificate's status.
func ReadStatus(u *unstructured.Unstructured) CertificateStatus {
	var s CertificateStatus
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok {
			continue
		}
		cc := &CertCondition{}
		cc.Status, _ = m["status"].(string)
		cc.Reason, _ = m["reason"].(string)
		cc.Message, _ = m["message"].(string)
		switch m["type"] {
		case "Ready":
			s.Ready = cc
		case "Issuing":
			s.Issuing = cc
		}
	}
	if t, _, _ := unstructured.NestedString(u.Object, "status", "lastFailureTime"); t != "" {
		if parsed, err := time.Parse(time.RFC3339, t); err == nil {
			s.LastFailureTime = parsed
		}
	}
	s.FailedIssuanceAttempts, _, _ = unstructured.NestedInt64(u.Object, "status", "failedIssuanceAttempts")
	return s
}

// Issued: cert-manager says the certificate is Ready.
func (s CertificateStatus) Issued() bool { return s.Ready != nil && s.Ready.Status == "True" }

// Failed: the certificate is not Ready, cert-manager is not issuing it,
// and its last issuance failed. shardgate then deletes the Certificate
// (not the Secret) and writes it again after its own backoff, so that a
// failing name neither keeps its order slot nor waits on cert-manager's
// backoff. A renewal that fails while the certificate is still Ready is
// left to cert-manager.
func (s CertificateStatus) Failed() bool {
	if s.Issued() || (s.Issuing != nil && s.Issuing.Status == "True") {
		return false
	}
	return !s.LastFailureTime.IsZero() || s.FailedIssuanceAttempts > 0 ||
		(s.Issuing != nil && s.Issuing.Reason == "Failed")
}

// FailureMessage is cert-manager's word on the failure.
func (s CertificateStatus) FailureMessage() string {
	for _, c := range []*CertCondition{s.Issuing, s.Ready} {
		if c != nil && c.Message != "" {
			return c.Message
		}
	}
	return "cert-manager reported a failed issuance"
}

// StateOf maps a written Certificate's status to CertificateReady: True
// Issued when Ready; False Issuing while cert-manager issues it (or has
// not reported yet); otherwise False with cert-manager's own Ready reason
// and message. secret names the Secret, for the message.
func StateOf(s CertificateStatus, secret string) State {
	switch {
	case s.Issued():
		return State{metav1.ConditionTrue, shardgatev1alpha1.ReasonCertificateIssued,
			fmt.Sprintf("cert-manager issued the certificate; it is served from Secret %s", secret)}
	case s.Issuing != nil && s.Issuing.Status == "True":
		return State{metav1.ConditionFalse, shardgatev1alpha1.ReasonCertificateIssuing, "cert-manager is issuing the certificate: " + s.Issuing.Message}
	case s.Ready != nil && s.Ready.Reason != "":
		return State{metav1.ConditionFalse, s.Ready.Reason, s.Ready.Message}
	}
	return State{metav1.ConditionFalse, shardgatev1alpha1.ReasonCertificateIssuing, "the Certificate is written; cert-manager has not reported on it yet"}
}

// WaitState is a waiting name's CertificateReady.
func WaitState(w Wait) State {
	return State{metav1.ConditionFalse, w.Reason, w.Message}
}

// ShardCertificateState is CertificateReady of a name its shard's domain
// covers.
func ShardCertificateState(domain string) State {
	return State{metav1.ConditionTrue, shardgatev1alpha1.ReasonShardCertificate,
		fmt.Sprintf("the name is under the shard's domain %s and is served with the shard's own certificate", domain)}
}
