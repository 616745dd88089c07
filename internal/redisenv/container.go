package redisenv

import (
	"context"
	"fmt"
)

// startContainer starts the container backend.
func startContainer(ctx context.Context, cfg Config, why string) (*Target, error) {
	return nil, fmt.Errorf("%w: backend container is not implemented yet", ErrUnavailable)
}
