package core

import (
	"reflect"
	"testing"
	"time"

	"github.com/mpq/mpq/scheduler"
)

// TestPathInfosOverwriteEveryField: the snapshots pathInfos builds in
// place, over slots left dirty by earlier snapshots, are the same as
// snapshots built from nothing. A field of scheduler.PathInfo that
// fillInfo forgets would keep the dirty value and fail here.
func TestPathInfosOverwriteEveryField(t *testing.T) {
	cc, sc := testConfigs(t)
	p := newPair(t, cc, sc, EndpointConfig{})
	openSecondPath(t, p)
	p.transfer(p.server, p.client, randomBytes(256<<10, 3), 20*time.Second)
	c := p.server
	if len(c.paths) < 2 {
		t.Fatalf("%d paths, want 2", len(c.paths))
	}
	// Every slot dirty: each field set to a value no snapshot has.
	c.pathBuf = make([]scheduler.PathInfo, len(c.paths))
	for k := range c.pathBuf {
		v := reflect.ValueOf(&c.pathBuf[k]).Elem()
		for f := 0; f < v.NumField(); f++ {
			switch fv := v.Field(f); fv.Kind() {
			case reflect.Bool:
				fv.SetBool(true)
			case reflect.Int, reflect.Int64:
				fv.SetInt(-12345)
			case reflect.Uint8, reflect.Uint64:
				fv.SetUint(201)
			case reflect.Struct: // time.Time
				fv.Set(reflect.ValueOf(time.Unix(12345, 0)))
			default:
				t.Fatalf("PathInfo.%s: kind %v not covered by this test", v.Type().Field(f).Name, fv.Kind())
			}
		}
	}
	now := p.now
	got := c.pathInfos(c.paths, now)
	for k, q := range c.paths {
		var want scheduler.PathInfo
		c.fillInfo(&want, q, now)
		if !reflect.DeepEqual(got[k], want) {
			t.Errorf("path %d: in place %+v, from nothing %+v", q.id, got[k], want)
		}
		if fresh := c.info(q, now); !reflect.DeepEqual(fresh, want) {
			t.Errorf("path %d: info %+v, fillInfo %+v", q.id, fresh, want)
		}
	}
}
