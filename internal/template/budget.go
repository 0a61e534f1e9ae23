package template

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"text/template"
	"text/template/parse"

	htmltemplate "html/template"
)

// What a template may do, and what one rendering may spend.
//
// A template is the producer's code run by the engine, so its language is
// a small part of text/template (and html/template) whose cost is bounded
// by the template's size and the budget below, whatever the template
// holds:
//
//   - Actions may print and test fields and variables ({{.a.b}}, {{$x}},
//     {{$.a}}), declare and assign variables, and use {{if}}, {{else}},
//     {{with}}, {{range}}, {{break}}, {{continue}} and comments.
//   - {{range}} goes over one field or variable of the data ({{range
//     .items}}, {{range $k, $v := $.m}}), never over a number or a
//     function's result; at render it must be a list or an object (a
//     number is refused), and every iteration is charged to the budget.
//   - In HTML, an action prints a string, number, boolean or null, never
//     a list or an object.
//   - The functions are and, or, not, eq, ne, lt, le, gt, ge, len, index,
//     printf and urlquery (not in HTML, which escapes a URL's query
//     itself). printf's format is a literal whose widths and precisions
//     are at most 99, with no * and no [n]; printf and urlquery take
//     strings, numbers, booleans and null, never a list or an object, and
//     what they build is charged to the budget before it is built. Every
//     other function (print, println, html, js, slice, call) is refused.
//   - {{define}}, {{template}} and {{block}} are refused: one template per
//     part, no recursion.
//   - A version's stored text is at most MaxTemplateBytes, its parts hold
//     at most MaxTemplateNodes parse nodes in all (each name of .a.b.c
//     one), nested at most MaxTemplateDepth deep, and a part declares at
//     most MaxTemplateVariables variables.
//
// At render a budget is enforced: MaxRenderSteps steps (each node of a
// part, each node of a range's body once per element, and one per
// bytesPerStep bytes compared, hashed or written), MaxBuiltBytes of
// values built by functions, MaxRenderedBytes per part and MaxRenderBytes
// per rendering written. Intake renders every locale of an intent on one
// budget (and at most MaxCheckBytes written in all), so an intent
// accepted renders at delivery, with the same data, within it.
//
// Why that bounds the work: text/template cannot be cancelled, so the
// bound is the language's. Its only loop is {{range}}, over data that
// intake bounds, charged before it starts; there is no recursion; every
// node does a fixed amount of work besides what it compares, hashes,
// builds or writes, and that is charged by its size, before it is done
// or (a text part's write) as it is done, so at most one node's work
// passes the budget. One rendering thus costs at most MaxRenderSteps
// node evaluations of a few hundred nanoseconds, and holds at most its
// output and what it built.
const (
	// MaxTemplateBytes bounds the stored text of one version (its
	// locales JSON), as herald.templates' check does.
	MaxTemplateBytes = 256 << 10
	// MaxTemplateNodes bounds the parse nodes of all parts of a version.
	MaxTemplateNodes = 20_000
	// MaxTemplateDepth bounds how deep control structures and
	// parenthesized pipelines nest.
	MaxTemplateDepth = 12
	// MaxTemplateVariables bounds the variables one part declares
	// ({{$x := ...}}, {{range $i, $e := ...}}).
	MaxTemplateVariables = 64
	// MaxRenderSteps bounds the steps of one rendering, and of intake's
	// check of one intent (every locale and channel together).
	MaxRenderSteps = 100_000
	// MaxBuiltBytes bounds the bytes printf and urlquery build in one
	// rendering, and in intake's check of one intent.
	MaxBuiltBytes = 1 << 20
	// MaxRenderBytes bounds what one rendering (every part of one channel
	// in one locale) writes.
	MaxRenderBytes = 1 << 20
	// MaxCheckBytes bounds what intake's check of one intent writes,
	// every locale and channel together.
	MaxCheckBytes = 8 << 20
)

// ErrOverBudget is wrapped by Render's error (and intake's refusal) for a
// rendering that would exceed its budget.
var ErrOverBudget = errors.New("over the template's budget")

// ErrNotAllowed is wrapped by Render's error for what a template may not
// do that only the data shows: a {{range}} over a number, a list or an
// object given to printf or urlquery, or printed whole in HTML.
var ErrNotAllowed = errors.New("not allowed in a template")

// errTooLong is limitWriter's refusal of a part longer than
// MaxRenderedBytes.
var errTooLong = fmt.Errorf("%w: the part renders longer than %d bytes", ErrOverBudget, MaxRenderedBytes)

// allowedFuncs are the functions a template may call. and, or, not and
// len are text/template's own, each of constant cost; the comparisons and
// index are copies of its own (stdfuncs.go) charged by the bytes
// they compare or hash, printf and urlquery charged versions
// (instance.funcs).
var allowedFuncs = map[string]bool{
	"and": true, "or": true, "not": true,
	"eq": true, "ne": true, "lt": true, "le": true, "gt": true, "ge": true,
	"len": true, "index": true, "printf": true, "urlquery": true,
}

// allowedList is allowedFuncs for error messages.
var allowedList = func() string {
	var names []string
	for n := range allowedFuncs {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}()

// rangeFunc is the function every {{range}}'s pipeline ends in once
// parsed: it checks and charges what the range goes over. A template
// cannot name it: it is added after the template is parsed, and the
// check refuses every function not in allowedFuncs.
const rangeFunc = "heraldRange"

// printFunc is the function every action of an HTML part that prints
// ends in once parsed (instance.print); like rangeFunc, a template
// cannot name it.
const printFunc = "heraldPrint"

// budget is what one rendering (Render) or one intake check (every
// rendering of one intent) may still spend. err is the first limit hit.
type budget struct {
	steps, built int
	out, outAll  int // written in this rendering, and in all
	err          error
}

// charge spends n steps.
func (b *budget) charge(n int) error {
	b.steps += n
	if b.steps > MaxRenderSteps {
		return b.fail(fmt.Errorf("%w: more than %d steps (each action once, a range's body once per element)", ErrOverBudget, MaxRenderSteps))
	}
	return nil
}

// build spends n built bytes.
func (b *budget) build(n int) error {
	if b.built+n > MaxBuiltBytes {
		return b.fail(fmt.Errorf("%w: printf and urlquery would build more than %d bytes", ErrOverBudget, MaxBuiltBytes))
	}
	b.built += n
	return nil
}

func (b *budget) fail(err error) error {
	if b.err == nil {
		b.err = err
	}
	return err
}

// limitWriter is one part's output: at most MaxRenderedBytes, and within
// the rendering's and the check's totals.
type limitWriter struct {
	strings.Builder
	b *budget
}

func (w *limitWriter) Write(p []byte) (int, error) {
	switch {
	case w.Len()+len(p) > MaxRenderedBytes:
		return 0, w.b.fail(errTooLong)
	case w.b.out+len(p) > MaxRenderBytes:
		return 0, w.b.fail(fmt.Errorf("%w: the rendering's parts are longer than %d bytes in all", ErrOverBudget, MaxRenderBytes))
	case w.b.outAll+len(p) > MaxCheckBytes:
		return 0, w.b.fail(fmt.Errorf("%w: the template's locales render longer than %d bytes in all", ErrOverBudget, MaxCheckBytes))
	}
	if err := w.b.charge(len(p) / bytesPerStep); err != nil {
		return 0, err
	}
	w.b.out += len(p)
	w.b.outAll += len(p)
	return w.Builder.Write(p)
}

var _ io.Writer = (*limitWriter)(nil)

// part is one parsed part (a body, a subject, a webhook string) and the
// instances that execute it.
type part struct {
	where string // name/locale/part, for errors
	text  *template.Template
	html  *htmltemplate.Template
	steps int // what one execution costs before its ranges
	pool  sync.Pool
}

// instance is a copy of a part's template whose functions charge b, the
// budget of the rendering using it: one rendering at a time.
type instance struct {
	text *template.Template
	html *htmltemplate.Template
	b    *budget
}

// funcs are the instance's functions: the allowed ones that may cost more
// than a step, charged, and the ones the check adds.
func (in *instance) funcs() map[string]any {
	return map[string]any{
		"printf": in.printf, "urlquery": in.urlquery,
		"eq": func(a reflect.Value, b ...reflect.Value) (bool, error) {
			if err := in.chargeValues(a, b...); err != nil {
				return false, err
			}
			return eq(a, b...)
		},
		"ne": in.compare(ne), "lt": in.compare(lt), "le": in.compare(le), "gt": in.compare(gt), "ge": in.compare(ge),
		"index": func(item reflect.Value, indexes ...reflect.Value) (reflect.Value, error) {
			if err := in.chargeValues(reflect.Value{}, indexes...); err != nil {
				return reflect.Value{}, err
			}
			return index(item, indexes...)
		},
		rangeFunc: in.rangeOver, printFunc: in.print,
	}
}

// compare charges a comparison of two values before making it.
func (in *instance) compare(f func(a, b reflect.Value) (bool, error)) func(a, b reflect.Value) (bool, error) {
	return func(a, b reflect.Value) (bool, error) {
		if err := in.chargeValues(a, b); err != nil {
			return false, err
		}
		return f(a, b)
	}
}

// breakSteps is what a {{break}} or {{continue}} costs: text/template
// unwinds with a panic, the cost of several other nodes.
const breakSteps = 8

// bytesPerStep is how many bytes of a string one step may read: comparing,
// hashing or printing a string of n bytes costs n/bytesPerStep steps.
const bytesPerStep = 64

// chargeValues charges the strings among vs by their length.
func (in *instance) chargeValues(v reflect.Value, vs ...reflect.Value) error {
	n := 0
	for _, x := range append(vs, v) {
		if x = indirectInterface(x); x.Kind() == reflect.String {
			n += x.Len()
		}
	}
	return in.b.charge(n / bytesPerStep)
}

// print ends every action of an HTML part that prints: what it prints is
// a string, number, boolean or null (a list or an object printed whole
// would cost its size to format, and is no message), charged by its
// length.
func (in *instance) print(v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	n, err := scalarLen("{{...}}", v)
	if err != nil {
		return nil, in.b.fail(fmt.Errorf("%w: an action prints a list or an object: print its fields, or range over it", ErrNotAllowed))
	}
	if err := in.b.charge(n / bytesPerStep); err != nil {
		return nil, err
	}
	return v, nil
}

func (p *part) instance() (*instance, error) {
	if in, ok := p.pool.Get().(*instance); ok {
		return in, nil
	}
	in := &instance{}
	var err error
	if p.html != nil {
		// An html/template is cloned before it is executed (escaped):
		// the part's own is never executed.
		if in.html, err = p.html.Clone(); err != nil {
			return nil, err
		}
		in.html.Funcs(in.funcs())
	} else {
		if in.text, err = p.text.Clone(); err != nil {
			return nil, err
		}
		in.text.Funcs(in.funcs())
	}
	return in, nil
}

// exec renders the part with data, charged to b.
func (p *part) exec(data map[string]any, b *budget) (string, error) {
	if err := b.charge(p.steps); err != nil {
		return "", fmt.Errorf("template %s: %w", p.where, err)
	}
	in, err := p.instance()
	if err != nil {
		return "", fmt.Errorf("template %s: %w", p.where, err)
	}
	in.b = b
	w := &limitWriter{b: b}
	if in.html != nil {
		err = in.html.Execute(w, data)
	} else {
		err = in.text.Execute(w, data)
	}
	in.b = nil
	p.pool.Put(in)
	if b.err != nil {
		// The budget's own words, not text/template's report of the
		// function that ran out.
		return "", fmt.Errorf("template %s: %w", p.where, b.err)
	}
	if err != nil {
		return "", err
	}
	return w.String(), nil
}

// rangeOver is the end of every {{range}}'s pipeline: v must be a list or
// an object (or null, which ranges over nothing); its elements times the
// body's steps are charged before the first iteration.
func (in *instance) rangeOver(body int, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array, reflect.Map:
	default:
		return nil, in.b.fail(fmt.Errorf("%w: {{range}} over %s: only a list or an object of the data may be ranged over", ErrNotAllowed, rv.Kind()))
	}
	n := rv.Len() * (body + 1)
	if rv.Kind() == reflect.Map {
		// The keys are sorted before the first iteration.
		for _, k := range rv.MapKeys() {
			if k = indirectInterface(k); k.Kind() == reflect.String {
				n += k.Len() / bytesPerStep
			}
		}
	}
	if err := in.b.charge(n); err != nil {
		return nil, err
	}
	return v, nil
}

// scalarLen is the length of v as printf or urlquery prints it, bounded
// from above, or an error for a value that is not a string, number,
// boolean or null.
func scalarLen(fn string, v any) (int, error) {
	if v == nil {
		return 5, nil
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.String:
		return rv.Len(), nil
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return 64, nil // the longest is a float64 written out: -1.7976931348623157e+308; a complex is two
	}
	return 0, fmt.Errorf("%w: %s takes strings, numbers, booleans and null, not a %s", ErrNotAllowed, fn, rv.Kind())
}

// printf is fmt.Sprintf, charged: its format was checked at parse (a
// literal, widths and precisions at most 99), its arguments are scalars,
// and the most it could build is charged before it is built: a verb
// writes a string argument at most 4 bytes per byte (%q of invalid
// UTF-8: \xff), a number at most 64 bytes, each plus its width and
// precision (at most 99 each).
func (in *instance) printf(format string, args ...any) (string, error) {
	most := len(format) + 2*99*len(args)
	for _, a := range args {
		n, err := scalarLen("printf", a)
		if err != nil {
			return "", in.b.fail(err)
		}
		most += 4 * n
	}
	if err := in.b.build(most); err != nil {
		return "", err
	}
	return fmt.Sprintf(format, args...), nil
}

// urlquery is text/template's urlquery (its arguments printed as by
// fmt.Sprint, query-escaped), charged: at most 3 bytes per byte.
func (in *instance) urlquery(args ...any) (string, error) {
	most := 0
	for _, a := range args {
		n, err := scalarLen("urlquery", a)
		if err != nil {
			return "", in.b.fail(err)
		}
		most += 3 * (n + 1)
	}
	if err := in.b.build(most); err != nil {
		return "", err
	}
	var s string
	if len(args) == 1 {
		if str, ok := args[0].(string); ok {
			s = str
		}
	}
	if s == "" {
		s = fmt.Sprint(args...)
	}
	return url.QueryEscape(s), nil
}

// treeCheck walks a part's parse tree at publish: it refuses what is not
// allowed, counts nodes and nesting, collects the root variables the part
// uses and ends every {{range}}'s pipeline with rangeFunc.
type treeCheck struct {
	where string
	tree  *parse.Tree
	vars  map[string]bool
	nodes *int // of the whole version
	depth int
	decls int  // variables declared in the part
	html  bool // an html/template part
}

// refuse is the error for node n, which is not allowed.
func (c *treeCheck) refuse(n parse.Node, format string, args ...any) error {
	loc := ""
	if n != nil && c.tree != nil {
		// ErrorContext says name:line:col; the name is c.where.
		loc, _ = c.tree.ErrorContext(n)
		loc = "line " + strings.TrimPrefix(loc, c.tree.ParseName+":") + ": "
	}
	return fmt.Errorf("template %s: %s%s", c.where, loc, fmt.Sprintf(format, args...))
}

// count counts one node against MaxTemplateNodes.
func (c *treeCheck) count(n parse.Node) error {
	*c.nodes++
	if *c.nodes > MaxTemplateNodes {
		return c.refuse(n, "the template has more than %d parse nodes in all", MaxTemplateNodes)
	}
	return nil
}

// list walks a list and returns its steps: one per node, a range's body
// not included (the range charges it per element).
func (c *treeCheck) list(l *parse.ListNode, rootDot bool) (int, error) {
	if l == nil {
		return 0, nil
	}
	steps := 0
	for _, n := range l.Nodes {
		s, err := c.node(n, rootDot)
		if err != nil {
			return 0, err
		}
		steps += s
	}
	return steps, nil
}

// nest enters one level of nesting.
func (c *treeCheck) nest(n parse.Node) error {
	c.depth++
	if c.depth > MaxTemplateDepth {
		return c.refuse(n, "actions nest more than %d deep", MaxTemplateDepth)
	}
	return nil
}

// node walks one node of a list and returns its steps.
func (c *treeCheck) node(n parse.Node, rootDot bool) (int, error) {
	if err := c.count(n); err != nil {
		return 0, err
	}
	switch x := n.(type) {
	case *parse.TextNode, *parse.CommentNode:
		return 1, nil
	case *parse.BreakNode, *parse.ContinueNode:
		return breakSteps, nil
	case *parse.ActionNode:
		s, err := c.pipe(x.Pipe, rootDot)
		if err == nil && len(x.Pipe.Decl) == 0 && c.html {
			// It prints, through html/template's escaping functions,
			// which would format a list or an object whole to write a
			// few bytes: {{.a | heraldPrint}}. A text part's prints are
			// charged as they are written (limitWriter).
			x.Pipe.Cmds = append(x.Pipe.Cmds, c.call(x.Pipe.Pos, printFunc))
		}
		return 1 + s, err
	case *parse.IfNode:
		return c.branch(&x.BranchNode, rootDot, rootDot)
	case *parse.WithNode:
		return c.branch(&x.BranchNode, false, rootDot)
	case *parse.RangeNode:
		return c.rangeNode(x, rootDot)
	case *parse.TemplateNode:
		return 0, c.refuse(n, "{{template}} and {{block}} are not allowed: each part is one template")
	}
	return 0, c.refuse(n, "%s is not allowed", n)
}

// branch walks an if/with: its pipeline and else branch see the outer
// dot, its body bodyRoot's.
func (c *treeCheck) branch(b *parse.BranchNode, bodyRoot, rootDot bool) (int, error) {
	if err := c.nest(b); err != nil {
		return 0, err
	}
	defer func() { c.depth-- }()
	s1, err := c.pipe(b.Pipe, rootDot)
	if err != nil {
		return 0, err
	}
	s2, err := c.list(b.List, bodyRoot)
	if err != nil {
		return 0, err
	}
	s3, err := c.list(b.ElseList, rootDot)
	return 1 + s1 + s2 + s3, err
}

// rangeNode walks a range: its pipeline must be one field or variable;
// its pipeline then ends in rangeFunc with the body's steps.
func (c *treeCheck) rangeNode(r *parse.RangeNode, rootDot bool) (int, error) {
	if err := c.nest(r); err != nil {
		return 0, err
	}
	defer func() { c.depth-- }()
	p := r.Pipe
	if len(p.Cmds) != 1 || len(p.Cmds[0].Args) != 1 {
		return 0, c.refuse(r, "{{range %s}} is not allowed: range goes over one field or variable of the data (a list or an object)", p)
	}
	switch p.Cmds[0].Args[0].(type) {
	case *parse.FieldNode, *parse.VariableNode, *parse.DotNode:
	default:
		return 0, c.refuse(r, "{{range %s}} is not allowed: range goes over one field or variable of the data (a list or an object), never a number or a function's result", p)
	}
	s1, err := c.pipe(p, rootDot)
	if err != nil {
		return 0, err
	}
	body, err := c.list(r.List, false)
	if err != nil {
		return 0, err
	}
	s3, err := c.list(r.ElseList, rootDot)
	if err != nil {
		return 0, err
	}
	// The charge: {{range .items | heraldRange BODY}}.
	p.Cmds = append(p.Cmds, c.call(p.Pos, rangeFunc,
		&parse.NumberNode{NodeType: parse.NodeNumber, Pos: p.Pos, IsInt: true, Int64: int64(body), Text: strconv.Itoa(body)}))
	return 1 + s1 + s3, nil
}

// call is a command calling fn with args, added by the check.
func (c *treeCheck) call(pos parse.Pos, fn string, args ...parse.Node) *parse.CommandNode {
	return &parse.CommandNode{NodeType: parse.NodeCommand, Pos: pos,
		Args: append([]parse.Node{parse.NewIdentifier(fn).SetTree(c.tree).SetPos(pos)}, args...)}
}

// pipe walks a pipeline (an action's, a condition's, or one in
// parentheses) and returns its steps.
func (c *treeCheck) pipe(p *parse.PipeNode, rootDot bool) (int, error) {
	if p == nil {
		return 0, nil
	}
	if err := c.count(p); err != nil {
		return 0, err
	}
	// A variable is looked up through every one in scope: few are allowed.
	if c.decls += len(p.Decl); c.decls > MaxTemplateVariables {
		return 0, c.refuse(p, "the part declares more than %d variables", MaxTemplateVariables)
	}
	steps := 0
	for _, cmd := range p.Cmds {
		if err := c.count(cmd); err != nil {
			return 0, err
		}
		for i, a := range cmd.Args {
			s, err := c.arg(cmd, i, a, rootDot)
			if err != nil {
				return 0, err
			}
			steps += s
		}
	}
	return steps, nil
}

// arg walks the i'th argument of cmd.
func (c *treeCheck) arg(cmd *parse.CommandNode, i int, a parse.Node, rootDot bool) (int, error) {
	if err := c.count(a); err != nil {
		return 0, err
	}
	switch x := a.(type) {
	case *parse.FieldNode:
		if rootDot && len(x.Ident) > 0 {
			c.vars[x.Ident[0]] = true
		}
		return c.idents(a, len(x.Ident))
	case *parse.VariableNode:
		if len(x.Ident) > 1 && x.Ident[0] == "$" {
			c.vars[x.Ident[1]] = true
		}
		return c.idents(a, len(x.Ident))
	case *parse.DotNode, *parse.NilNode, *parse.BoolNode, *parse.NumberNode, *parse.StringNode:
	case *parse.IdentifierNode:
		if !allowedFuncs[x.Ident] {
			return 0, c.refuse(a, "the function %s is not allowed: a template may call %s", x.Ident, allowedList)
		}
		if x.Ident == "urlquery" && c.html {
			return 0, c.refuse(a, "urlquery is not allowed in HTML, which escapes every value for where it lands (a URL's query included)")
		}
		if x.Ident == "printf" {
			if i != 0 || len(cmd.Args) < 2 {
				return 0, c.refuse(a, "printf needs a format")
			}
			f, ok := cmd.Args[1].(*parse.StringNode)
			if !ok {
				return 0, c.refuse(a, "printf's format must be a quoted string, not %s", cmd.Args[1])
			}
			if err := checkFormat(f.Text); err != nil {
				return 0, c.refuse(a, "printf format %s: %v", f.Quoted, err)
			}
		}
	case *parse.ChainNode:
		s, err := c.arg(cmd, i, x.Node, rootDot)
		if err != nil {
			return 0, err
		}
		s2, err := c.idents(a, len(x.Field))
		return s + s2, err
	case *parse.PipeNode:
		if err := c.nest(a); err != nil {
			return 0, err
		}
		defer func() { c.depth-- }()
		s, err := c.pipe(x, rootDot)
		return 1 + s, err
	default:
		return 0, c.refuse(a, "%s is not allowed", a)
	}
	return 1, nil
}

// idents counts the n names of a field or variable reference (.a.b.c):
// each is a node, and a step, as each is looked up.
func (c *treeCheck) idents(a parse.Node, n int) (int, error) {
	for range n - 1 {
		if err := c.count(a); err != nil {
			return 0, err
		}
	}
	return max(n, 1), nil
}

// checkFormat refuses a printf format that could write more than its
// arguments and 99 bytes per verb: a width or precision over 99, a width
// or precision taken from an argument (*), or an argument index ([n]).
func checkFormat(f string) error {
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			continue
		}
		i++
		for i < len(f) && strings.IndexByte("+-# 0", f[i]) >= 0 {
			i++
		}
		for _, what := range []string{"width", "precision"} {
			if what == "precision" {
				if i >= len(f) || f[i] != '.' {
					break
				}
				i++
			}
			j := i
			for i < len(f) && f[i] >= '0' && f[i] <= '9' {
				i++
			}
			if i-j > 2 {
				return fmt.Errorf("a %s over 99 is not allowed", what)
			}
			if i < len(f) && (f[i] == '*' || f[i] == '[') {
				return fmt.Errorf("%c is not allowed: widths and precisions are written in the format", f[i])
			}
		}
		if i >= len(f) {
			return errors.New("ends inside a verb")
		}
	}
	return nil
}
