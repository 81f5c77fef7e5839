package scheduler

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/mpq/mpq/internal/names"
)

// Option is a named option of a path scheduler: a rule or a reading of
// the paper that an experiment can switch (transport.scheduler_options).
// A boolean option has no Choices; a choice option takes one of Choices.
type Option struct {
	Name string
	// Choices are the values of a choice option; nil for a boolean.
	Choices []string
	// Default is the value the scheduler runs with unless told
	// otherwise ("true" or "false" for a boolean).
	Default string
	// Doc says in one sentence what the option does.
	Doc string
	// WrittenWith, if set, names a boolean option without which this
	// one does nothing: while that one is off and this one has its
	// default, a run's written configuration (config.resolved.toml, and
	// so its config_sha256) leaves this one out, so that an option added
	// after results were published keeps the configurations of the runs
	// it cannot affect the same (Written).
	WrittenWith string
}

// Bool reports whether o is a boolean option.
func (o *Option) Bool() bool { return o.Choices == nil }

// Options are the resolved options of a path scheduler: every option it
// has, by name, with its value ("true"/"false" for booleans).
type Options map[string]string

// Bool returns the value of the boolean option name (false if absent).
func (o Options) Bool(name string) bool { return o[name] == "true" }

// String is "name=value, ..." sorted by name.
func (o Options) String() string {
	keys := make([]string, 0, len(o))
	for k := range o {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s=%s", k, o[k])
	}
	return b.String()
}

// OptionFactory builds a path scheduler with resolved options.
type OptionFactory func(Options) PathScheduler

type optionScheduler struct {
	opts []Option
	f    OptionFactory
}

var optionFactories = map[string]optionScheduler{}

// RegisterPathWithOptions makes a path scheduler with options available
// under name; NewPathScheduler builds it with the options' defaults.
func RegisterPathWithOptions(name string, opts []Option, f OptionFactory) {
	for _, o := range opts {
		if o.Bool() && o.Default != "true" && o.Default != "false" || !o.Bool() && !slices.Contains(o.Choices, o.Default) {
			panic(fmt.Sprintf("scheduler %s: option %s: bad default %q", name, o.Name, o.Default))
		}
	}
	mu.Lock()
	optionFactories[name] = optionScheduler{opts: slices.Clone(opts), f: f}
	mu.Unlock()
	RegisterPath(name, func() PathScheduler {
		s, err := NewPath(name, nil)
		if err != nil {
			panic(err) // defaults always resolve
		}
		return s
	})
}

// PathOptions returns the options of the path scheduler registered under
// name (nil if it has none).
func PathOptions(name string) []Option {
	mu.RLock()
	defer mu.RUnlock()
	return slices.Clone(optionFactories[name].opts)
}

// OptionError is a problem with one option of a scheduler.
type OptionError struct {
	// Key is the option's name.
	Key string
	Msg string
}

func (e *OptionError) Error() string { return e.Key + ": " + e.Msg }

// ResolvePathOptions checks the options set for the path scheduler name
// (values bool or string, as a TOML file gives them) and returns every
// option of the scheduler with its value: set, or the default. Every
// problem is returned, one per key, sorted by key.
func ResolvePathOptions(name string, set map[string]any) (Options, []*OptionError) {
	mu.RLock()
	reg, ok := optionFactories[name]
	mu.RUnlock()
	out := Options{}
	var errs []*OptionError
	if !ok {
		for k := range set {
			errs = append(errs, &OptionError{k, fmt.Sprintf("path scheduler %q has no options", name)})
		}
		slices.SortFunc(errs, func(a, b *OptionError) int { return strings.Compare(a.Key, b.Key) })
		return out, errs
	}
	known := make([]string, len(reg.opts))
	for i, o := range reg.opts {
		known[i] = o.Name
		out[o.Name] = o.Default
	}
	for k, v := range set {
		i := slices.IndexFunc(reg.opts, func(o Option) bool { return o.Name == k })
		if i < 0 {
			errs = append(errs, &OptionError{k, names.Unknown("option of "+name, k, known)})
			continue
		}
		o := &reg.opts[i]
		if o.Bool() {
			b, ok := v.(bool)
			if !ok {
				errs = append(errs, &OptionError{k, fmt.Sprintf("want true or false, got %v", v)})
				continue
			}
			out[k] = strconv.FormatBool(b)
			continue
		}
		s, ok := v.(string)
		switch n := v.(type) {
		case int64: // a number among numeric choices (credit_rtts = 3)
			s, ok = strconv.FormatInt(n, 10), true
		case int:
			s, ok = strconv.Itoa(n), true
		}
		if !ok || !slices.Contains(o.Choices, s) {
			errs = append(errs, &OptionError{k, fmt.Sprintf("%s is not one of %s", quoteValue(v), strings.Join(quoteAll(o.Choices), ", "))})
			continue
		}
		out[k] = s
	}
	slices.SortFunc(errs, func(a, b *OptionError) int { return strings.Compare(a.Key, b.Key) })
	return out, errs
}

func quoteValue(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprint(v)
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = strconv.Quote(x)
	}
	return out
}

// NewPathSchedulerWith builds the path scheduler registered under name
// with the options set, values as a TOML file gives them (see
// ResolvePathOptions); with no options set it is NewPathScheduler.
// Callers that hold resolved Options use NewPath.
func NewPathSchedulerWith(name string, set map[string]any) (PathScheduler, error) {
	if len(set) == 0 {
		return NewPathScheduler(name)
	}
	opts, errs := ResolvePathOptions(name, set)
	if len(errs) > 0 {
		return nil, fmt.Errorf("path scheduler %s: option %w", name, errs[0])
	}
	return NewPath(name, opts)
}

// CheckPath reports whether NewPath(name, opts) would build a scheduler:
// name is registered, and every option in opts is one of its options with
// a valid value ("true" or "false" for a boolean, one of Choices
// otherwise). Options missing from opts take their defaults. It builds
// nothing.
func CheckPath(name string, opts Options) error {
	_, err := completeOptions(name, opts)
	return err
}

// completeOptions checks opts against the options of the path scheduler
// name and returns them with every missing option at its default (nil,
// ok, for a registered scheduler without options and no opts).
func completeOptions(name string, opts Options) (Options, error) {
	mu.RLock()
	reg, hasOpts := optionFactories[name]
	_, known := pathFactories[name]
	mu.RUnlock()
	if !known {
		return nil, fmt.Errorf("unknown path scheduler %q (known: %s)", name, strings.Join(PathSchedulers(), ", "))
	}
	if !hasOpts {
		if len(opts) > 0 {
			keys := make([]string, 0, len(opts))
			for k := range opts {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			return nil, fmt.Errorf("path scheduler %s: option %s: path scheduler %q has no options", name, keys[0], name)
		}
		return nil, nil
	}
	out := make(Options, len(reg.opts))
	for _, o := range reg.opts {
		out[o.Name] = o.Default
	}
	keys := make([]string, 0, len(opts))
	for k := range opts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := opts[k]
		i := slices.IndexFunc(reg.opts, func(o Option) bool { return o.Name == k })
		if i < 0 {
			known := make([]string, len(reg.opts))
			for j, o := range reg.opts {
				known[j] = o.Name
			}
			return nil, fmt.Errorf("path scheduler %s: option %s: %s", name, k, names.Unknown("option of "+name, k, known))
		}
		o := &reg.opts[i]
		if o.Bool() && v != "true" && v != "false" || !o.Bool() && !slices.Contains(o.Choices, v) {
			return nil, fmt.Errorf("path scheduler %s: option %s: %q is not a valid value", name, k, v)
		}
		out[k] = v
	}
	return out, nil
}

// NewPath builds the path scheduler registered under name with the
// resolved options opts (ResolvePathOptions; options missing from opts
// take their defaults, and nil is every default). A connection calls it
// once, when it is created.
func NewPath(name string, opts Options) (PathScheduler, error) {
	full, err := completeOptions(name, opts)
	if err != nil {
		return nil, err
	}
	mu.RLock()
	reg, hasOpts := optionFactories[name]
	f := pathFactories[name]
	mu.RUnlock()
	if !hasOpts {
		return f(), nil
	}
	return reg.f(full), nil
}

// Typed returns the options of the path scheduler sched as
// NewPathSchedulerWith takes them: booleans as bool, choices as string.
func (o Options) Typed(sched string) map[string]any {
	if len(o) == 0 {
		return nil
	}
	out := make(map[string]any, len(o))
	for _, opt := range PathOptions(sched) {
		v, ok := o[opt.Name]
		switch {
		case !ok:
		case opt.Bool():
			out[opt.Name] = v == "true"
		default:
			out[opt.Name] = v
		}
	}
	return out
}

// Written returns the options of the path scheduler sched as a run's
// configuration writes them: Typed, without the options that have their
// default while the option they are written with (WrittenWith) is off.
func (o Options) Written(sched string) map[string]any {
	out := o.Typed(sched)
	for _, opt := range PathOptions(sched) {
		if opt.WrittenWith != "" && !o.Bool(opt.WrittenWith) && o[opt.Name] == opt.Default {
			delete(out, opt.Name)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// HasOption reports whether some registered path scheduler has an option
// named name, and lists those schedulers.
func HasOption(name string) []string {
	mu.RLock()
	defer mu.RUnlock()
	var out []string
	for s, reg := range optionFactories {
		if slices.ContainsFunc(reg.opts, func(o Option) bool { return o.Name == name }) {
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}
