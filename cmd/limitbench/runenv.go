package main

import (
	"errors"
	"fmt"

	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/scenarios"
)

// checkEnvironments checks, before anything starts, that env can be started in every topology
// of every scenario (a Sentinel group on an external Redis cannot: limitbench starts the
// Sentinels) and that each scenario's faults are allowed on env (see
// scenarios.Scenario.CheckEnvironment), and that the topology has the replicas a wait_replicas
// asks for (scenarios.Scenario.CheckReplicas). Its error names the scenario file.
func checkEnvironments(loaded []*scenarios.Scenario, env redisenv.Config) error {
	var errs []error
	for _, s := range loaded {
		for _, t := range s.Topologies {
			c := env
			c.Topology = t
			if err := c.Validate(); err != nil {
				errs = append(errs, fmt.Errorf("%s: topology %s: %w", s.File, t, err))
				continue
			}
			if err := s.CheckEnvironment(env, t); err != nil {
				errs = append(errs, err)
			}
			if err := s.CheckReplicas(env, t); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
