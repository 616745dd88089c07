package algorithms

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// ReferenceName is the name results give the calibration script.
const ReferenceName = "reference"

// Reference returns the calibration algorithm: scripts/reference.lua, a bare INCR + PEXPIRE that
// admits everything. It is not a limiter and not in the registry (All and Lookup do not return
// it); the runner measures it under the same load as the algorithms so that results carry figures
// relative to it, and issue 3's cost targets are stated against it. Its contract is none.
func Reference() Algorithm { return referenceAlgorithm{} }

type referenceAlgorithm struct{}

var _ Algorithm = referenceAlgorithm{}

// Describe implements Algorithm.
func (referenceAlgorithm) Describe() Description {
	return Description{
		Name:           ReferenceName,
		Script:         "reference.lua",
		Origin:         "calibration: INCR + PEXPIRE, admits everything",
		KeysPerSubject: 1,
		Memory:         "O(1)",
		Cost:           true,
	}
}

// Contract implements Algorithm: none.
func (referenceAlgorithm) Contract(l Limit) (Contract, error) {
	if err := l.Validate(); err != nil {
		return Contract{}, err
	}
	return Contract{Kind: NoContract}, nil
}

// Prepare implements Algorithm.
func (a referenceAlgorithm) Prepare(ctx context.Context, c redis.UniversalClient, l Limit, prefix string) (Limiter, error) {
	s, err := prepareScript(ctx, a, c, l, prefix)
	if err != nil {
		return nil, err
	}
	return &referenceLimiter{script: s, fresh: isCluster(c), prefix: prefix, ttlMillis: l.Window.Milliseconds()}, nil
}

// Model implements Algorithm: none.
func (referenceAlgorithm) Model(Limit) Model { return nil }

type referenceLimiter struct {
	script    *script
	fresh     bool // prepared on a cluster client: see evalCmd
	prefix    string
	ttlMillis int64
}

func (r *referenceLimiter) Keys(req Request) []string {
	return []string{subjectKey(r.prefix, "ref", req.Subject)}
}

// referenceCall is the Call of a referenceLimiter: the script's arguments are the key and the
// expiry in ms.
type referenceCall struct {
	scriptCall
	r   *referenceLimiter
	key argBuf
	cmd *evalCmd
}

func (r *referenceLimiter) NewCall() Call {
	c := &referenceCall{scriptCall: scriptCall{name: "reference"}, r: r}
	c.cmd = newEvalCmd(r.script, r.fresh, []*argBuf{&c.key}, r.ttlMillis)
	return c
}

func (c *referenceCall) Send(ctx context.Context, rc redis.Cmdable, req Request) {
	if err := CheckSubject(req.Subject); err != nil {
		c.fail(fmt.Errorf("reference: %w", err))
		return
	}
	c.key.subjectKey(c.r.prefix, "ref", req.Subject)
	c.send(ctx, rc, c.cmd)
}

func (c *referenceCall) Result() (Decision, error) {
	raw, err := c.reply()
	if err != nil {
		return Decision{}, err
	}
	n, ok := raw.(int64)
	if !ok || n < 1 {
		return Decision{}, fmt.Errorf("reference: %w", badReply("want a positive integer", raw))
	}
	return Decision{Allowed: true}, nil
}
