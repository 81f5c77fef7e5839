package core

import (
	"strings"
	"sync"
	"testing"

	"github.com/mpq/mpq/scheduler"
)

// constructions counts the path schedulers built under the name
// "construct-count", with the options each was built with.
var constructions struct {
	sync.Mutex
	opts []scheduler.Options
}

func init() {
	scheduler.RegisterPathWithOptions("construct-count", []scheduler.Option{
		{Name: "flag", Default: "false", Doc: "a test option"},
	}, func(o scheduler.Options) scheduler.PathScheduler {
		constructions.Lock()
		constructions.opts = append(constructions.opts, o)
		constructions.Unlock()
		return &scheduler.LowRTT{}
	})
}

// TestSchedulerBuiltOncePerConnection: a connection builds its path
// scheduler once, from the options resolved before it (Config carries
// them), and validating a Config builds none.
func TestSchedulerBuiltOncePerConnection(t *testing.T) {
	constructions.Lock()
	constructions.opts = nil
	constructions.Unlock()
	ccfg, scfg := testConfigs(t)
	for _, c := range []*Config{ccfg, scfg} {
		c.PathScheduler = "construct-count"
		c.PathSchedulerOptions = scheduler.Options{"flag": "true"}
	}
	p := newPair(t, ccfg, scfg, EndpointConfig{})
	p.handshake()
	constructions.Lock()
	defer constructions.Unlock()
	if n := len(constructions.opts); n != 2 {
		t.Fatalf("%d path schedulers built for one client and one server connection, want 2", n)
	}
	for i, o := range constructions.opts {
		if o["flag"] != "true" {
			t.Errorf("scheduler %d built with %v, want flag=true", i, o)
		}
	}
}

// TestConfigChecksSchedulerOptions: Validate refuses options the path
// scheduler does not have or values it does not take, without building
// one.
func TestConfigChecksSchedulerOptions(t *testing.T) {
	for _, tc := range []struct {
		sched string
		opts  scheduler.Options
		want  string
	}{
		{"construct-count", scheduler.Options{"flg": "true"}, `option flg: unknown option of construct-count "flg"`},
		{"construct-count", scheduler.Options{"flag": "yes"}, `option flag: "yes" is not a valid value`},
		{"lowrtt", scheduler.Options{"flag": "true"}, `path scheduler "lowrtt" has no options`},
		{"no-such", nil, `unknown path scheduler "no-such"`},
	} {
		constructions.Lock()
		before := len(constructions.opts)
		constructions.Unlock()
		cfg, _ := testConfigs(t)
		cfg.PathScheduler, cfg.PathSchedulerOptions = tc.sched, tc.opts
		_, err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %v: error %v, want it to contain %q", tc.sched, tc.opts, err, tc.want)
		}
		constructions.Lock()
		if len(constructions.opts) != before {
			t.Errorf("%s %v: Validate built a scheduler", tc.sched, tc.opts)
		}
		constructions.Unlock()
	}
}
