package akash

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cosmos/btcutil/bech32"
)

// AccountPrefix is the bech32 human-readable part of Akash account
// addresses (owners and providers).
const AccountPrefix = "akash"

// maxAddressBytes is the longest address the Cosmos SDK accepts.
const maxAddressBytes = 255

// ErrInvalidAddress is wrapped by every ValidateAddress error.
var ErrInvalidAddress = errors.New("not a valid Akash account address")

// ValidateAddress checks addr as the Akash provider's operators check
// owners and providers: a non-blank bech32 string (at most 1023
// characters, checksum valid, one case) whose human-readable part is
// "akash" and whose data decodes to 1 to 255 bytes.
func ValidateAddress(addr string) error {
	if strings.TrimSpace(addr) == "" {
		return fmt.Errorf("%w: empty address", ErrInvalidAddress)
	}
	hrp, data, err := bech32.Decode(addr, 1023)
	if err != nil {
		return fmt.Errorf("%w: %q: decoding bech32 failed: %w", ErrInvalidAddress, addr, err)
	}
	if hrp != AccountPrefix {
		return fmt.Errorf("%w: %q: invalid Bech32 prefix; expected %s, got %s", ErrInvalidAddress, addr, AccountPrefix, hrp)
	}
	bz, err := bech32.ConvertBits(data, 5, 8, false)
	if err != nil {
		return fmt.Errorf("%w: %q: decoding bech32 failed: %w", ErrInvalidAddress, addr, err)
	}
	if len(bz) == 0 || len(bz) > maxAddressBytes {
		return fmt.Errorf("%w: %q: address length %d is not 1-%d bytes", ErrInvalidAddress, addr, len(bz), maxAddressBytes)
	}
	return nil
}
