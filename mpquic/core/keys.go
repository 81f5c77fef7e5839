package core

import (
	"time"

	"github.com/mpq/mpq/mpquic/internal/protection"
)

// levelKeys are the packet protection keys of the Initial or Handshake level.
type levelKeys struct {
	seal, open protection.Keys
	haveSeal   bool
	haveOpen   bool
	discarded  bool
}

// appKeys are the 1-RTT keys with the state of key updates (RFC 9001
// Section 6). Header protection keys never change; packet protection keys
// move through generations, the low bit of the generation being the key
// phase bit.
type appKeys struct {
	suite            *protection.Suite
	haveSeal         bool
	haveOpen         bool
	sealHP, openHP   *protection.HeaderProtector
	writeSecret      []byte
	readSecret       []byte
	write            *protection.AEAD // current generation
	read             *protection.AEAD // current generation
	nextRead         *protection.AEAD // generation+1, precomputed
	prevRead         *protection.AEAD // generation-1, until prevReadUntil
	prevReadUntil    time.Time
	generation       uint64
	packetsInPhase   uint64 // packets sealed with the current write key
	firstPNInPhase   map[uint64]uint64
	inPhase          uint64 // bit i: firstPNInPhase holds path i (i < 64)
	phaseAcked       bool   // a packet of the current phase was acknowledged
	updateInitiated  bool   // we initiated the current phase and no packet of it arrived yet
	openFailures     uint64
	sealedTotal      uint64
	keyUpdatePending bool
	// null makes every packet protection key of every generation a
	// protection.NewNullAEAD (Config.SimNullProtection).
	null bool
}

// newAEAD derives the packet protection key of a secret: AES-GCM or
// ChaCha20-Poly1305 as the suite says, or the null protection of the
// simulator.
func (k *appKeys) newAEAD(s *protection.Suite, secret []byte) (*protection.AEAD, error) {
	if k.null {
		return protection.NewNullAEAD(s, secret)
	}
	return protection.NewAEAD(s, secret)
}

// keyPhase is the key phase bit of the current generation.
func (k *appKeys) keyPhase() bool { return k.generation&1 == 1 }

// installSeal installs the first 1-RTT write secret.
func (k *appKeys) installSeal(s *protection.Suite, secret []byte) error {
	hp, err := protection.NewHeaderProtector(s, secret)
	if err != nil {
		return err
	}
	a, err := k.newAEAD(s, secret)
	if err != nil {
		return err
	}
	k.suite, k.sealHP, k.write, k.writeSecret, k.haveSeal = s, hp, a, secret, true
	k.firstPNInPhase, k.inPhase = map[uint64]uint64{}, 0
	return nil
}

// installOpen installs the first 1-RTT read secret.
func (k *appKeys) installOpen(s *protection.Suite, secret []byte) error {
	hp, err := protection.NewHeaderProtector(s, secret)
	if err != nil {
		return err
	}
	a, err := k.newAEAD(s, secret)
	if err != nil {
		return err
	}
	k.suite, k.openHP, k.read, k.readSecret, k.haveOpen = s, hp, a, secret, true
	return k.prepareNextRead()
}

func (k *appKeys) prepareNextRead() error {
	next := protection.NextSecret(k.suite, k.readSecret)
	a, err := k.newAEAD(k.suite, next)
	if err != nil {
		return err
	}
	k.nextRead = a
	return nil
}

// rotate moves both directions to the next generation (RFC 9001 Section 6).
// The old read key stays usable until prevUntil for reordered packets.
func (k *appKeys) rotate(prevUntil time.Time) error {
	k.writeSecret = protection.NextSecret(k.suite, k.writeSecret)
	w, err := k.newAEAD(k.suite, k.writeSecret)
	if err != nil {
		return err
	}
	k.readSecret = protection.NextSecret(k.suite, k.readSecret)
	k.prevRead, k.prevReadUntil = k.read, prevUntil
	k.read = k.nextRead
	k.write = w
	k.generation++
	k.packetsInPhase = 0
	k.phaseAcked = false
	clear(k.firstPNInPhase)
	k.inPhase = 0
	return k.prepareNextRead()
}

// canInitiateUpdate reports whether RFC 9001 Section 6.1 allows a new update:
// the handshake is confirmed (checked by the caller) and a packet sent in the
// current phase has been acknowledged.
func (k *appKeys) canInitiateUpdate() bool {
	return k.haveSeal && k.haveOpen && k.phaseAcked
}

// noteSent records a packet sealed in the current phase on a path.
func (k *appKeys) noteSent(pathID, pn uint64) {
	if pathID >= 64 || k.inPhase&(1<<pathID) == 0 {
		if _, ok := k.firstPNInPhase[pathID]; !ok {
			k.firstPNInPhase[pathID] = pn
		}
		if pathID < 64 {
			k.inPhase |= 1 << pathID
		}
	}
	k.packetsInPhase++
	k.sealedTotal++
}

// noteAcked records that packet pn on a path was acknowledged; an ACK for a
// packet of the current phase allows the next update.
func (k *appKeys) noteAcked(pathID, largest uint64) {
	if k.phaseAcked {
		return
	}
	if first, ok := k.firstPNInPhase[pathID]; ok && largest >= first {
		k.phaseAcked = true
	}
}
