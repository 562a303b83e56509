package autotlse2e_test

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/shardgate/shardgate/internal/testenv"
)

func TestAutoTLS(t *testing.T) {
	testenv.RequireCertManager(t)
	RegisterFailHandler(Fail)
	// One issuance takes about 12 s on a quiet machine; a loaded one may
	// take several times that.
	SetDefaultEventuallyTimeout(3 * time.Minute)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	RunSpecs(t, "autotlse2e")
}
