//go:build !linux

package netns

import (
	"context"
	"errors"
)

// Forward runs the forwarder; it needs Linux (AF_PACKET sockets).
func Forward(ctx context.Context, dir string) error {
	return errors.New("the namespace testbed's forwarder needs Linux")
}
