// Package faults owns the nemesis: what breaks Redis during a load and what is seen to break.
// A scenario's fault schedule (scenarios.Fault) is carried out by an Injector (Inject) with the
// proxies below and redisenv's node control; a measurement drives it through internal/measure's
// Faults stage, which also turns what the injector did into the verifier's fault windows.
//
// # Injector
//
// Inject starts one goroutine per fault of a schedule, each acting at its time on the run's
// clock: a restart, kill, pause, failover, script flush or client kill on the nodes its target
// resolves to when it starts, or a latency, reset or blackhole on the proxies in front of them
// (or on a master's replication link, routed before the load by RouteReplication). Each
// Injection records when the injector began and finished acting, the nodes, a failover's
// promoted replica and what went wrong; Busy says a restart or failover is under way, when
// Redis is unreachable on purpose.
//
// # Node watch
//
// A Watcher polls every node (INFO server, replication, stats, memory and commandstats: run_id,
// uptime, role, master_repl_offset, connected replicas, a replica's master and link, evicted_keys
// and maxmemory_policy, and the calls of the commands in Disruptive) on its own connections at a fixed interval and records
// time-stamped Events: a restart (run_id changed, or uptime went back), a promotion or
// demotion, a replica following another master, its link going down or up, a replication
// offset going back (writes the node had are gone), a node becoming unreachable and reachable
// again, keys evicted under maxmemory (evicted), and someone running FLUSHALL, FLUSHDB or SWAPDB
// (flushed), SCRIPT FLUSH or CLIENT KILL. So faults nobody injected are seen too. Events come from Changes, a pure function of
// consecutive Snapshots (time is an argument), table-tested without Redis. An event carries the
// interval in which the change happened: after the last poll that did not show it was sent, at
// or before the first poll that did came back, so the interval holds the change whatever the
// round trips. Each event says what it means for the limiters' state (Event.StateLost: a master
// restarted, flushed or evicting keys, a replica promoted) and in words (Event.Describe).
//
// The interval is kept short where it matters: a poll the node does not answer is followed by
// another after a tenth of the interval; a load that meets connection errors pokes the watch
// (Poke) so that the polls come at once; a connection the server closed (CLIENT KILL) is dialled
// again within the poll, so it is not taken for an outage; and Stop polls every node once more,
// so that a change until then is seen. Summary gives what the watch saw as a result entry's
// section (watch.Summary): each node's run id, role and uptime before and after, and every event.
// The event kinds and that section are plain values in the leaf package internal/faults/watch,
// so that the result schema can hold them without linking this package's proxies.
//
// # Guard
//
// A Guard watches a run's outcomes (load.Plan.OnOutcome) and stops the run when the environment
// is gone: Redis unreachable for good (DefaultLostRequests requests in a row that could not
// reach it over at least DefaultLostAfter: longer than a restart takes, so a restart is
// measured rather than taken for a loss; timeouts do not count, a paused server is still there)
// or a permission refused (NOPERM: an ACL that forbids the run's keys or commands).
//
// # Network faults
//
// A Proxy is a TCP proxy on 127.0.0.1 in front of one node; Inject adds a LinkFault to every
// connection through it, present and future, until the returned remove is called: latency with
// jitter, a connection reset, or a blackhole that holds the traffic and releases it, or drops it
// and closes the connections, when the fault ends.
//
// A Network puts one Proxy in front of every node and Sentinel of a target. Clients built with
// its Dialer (redisenv.ClientOptions.Dialer) reach every node through that node's proxy: the
// Dialer maps the address a client dials to the proxy of that node, so go-redis's cluster client,
// which dials whatever CLUSTER SLOTS, MOVED and ASK name, keeps going through the proxies after a
// redirect or a failover, and a failover client dials the master the Sentinels name through its
// proxy. Mapping at the dialer was chosen over making each node announce its proxy
// (cluster-announce-port) for the generator's traffic: announcing changes what every client and
// every replica of the node sees, so the generator's faults would also hit the replication links
// and the harness's own clients, while a Dialer touches only the clients that ask for it.
//
// The link between a master and its replicas gets its own proxy (Network.ProxyReplication,
// through redisenv's Target.RouteReplication): there the announced address is the only way in,
// since a replica dials the address its master announces (cluster) or the Sentinels give it.
// The Network's Dialer maps that announced address to the master's client proxy too, so the
// generator's clients never cross the replication proxy, and the node watch takes a replica that
// follows the proxy to follow the master itself (WatchOptions.MasterOf, redisenv's
// Target.RealAddr), so that a promotion names the master it deposes. A scenario asks for it with
// link: replication on a latency, reset or blackhole fault; the runner puts the proxies in place
// before the load and the fault acts on them at its time.
//
// The proxies come from Shopify's toxiproxy (github.com/Shopify/toxiproxy/v2), run in process:
// its Proxy and ToxicCollection types are used directly, without its HTTP API or its server
// binary. Why toxiproxy: it is the proxy Jepsen-style and integration test suites commonly use
// for exactly these faults, it is maintained by Shopify (v2.12.0, March 2025), its latency,
// reset_peer and timeout toxics apply to live connections as well as new ones, and it accepts
// custom toxics through a public registry, which the blackhole that holds and then releases
// traffic needs (its own timeout toxic drops what it holds). Its cost: zerolog, gorilla/mux and
// the Prometheus client come with the module (mux and Prometheus are linked but unused here;
// metrics stay off). The alternatives were weaker: kffl/speedbump adds latency only; tc netem
// and iptables (comcast, pumba) need root, act on the whole loopback interface or need
// container images, and cannot target one client's connections; a hand-written proxy would
// be one more thing to get right. Every proxy listens on 127.0.0.1 only and forwards only to
// loopback addresses.
package faults
