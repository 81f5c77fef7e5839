// Package network is the home of the networks an experiment runs over,
// one package each, all applying one link model:
//
//   - linkmodel: the link model (rate, propagation delay, a drop-tail
//     queue in bytes, Bernoulli or Gilbert loss, jitter that never
//     reorders, scheduled changes and traces), without a clock;
//   - netsim: the deterministic discrete-event simulator that drives the
//     model on a virtual clock (the default backend);
//   - linkemu: the model in real time, and the loopback emulator;
//   - netns: the namespace testbed (two Linux network namespaces joined
//     by netem or by the userspace forwarder).
//
// This package itself holds no code.
package network
