package testenv_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/shardgate/shardgate/internal/testenv"
)

func TestHarness(t *testing.T) {
	testenv.Require(t)
	RegisterFailHandler(Fail)
	RunSpecs(t, "testenv harness")
}
