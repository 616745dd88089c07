package algorithms

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The expression language of templates (see template.go): parsed into a tree (parseExpr), folded
// over the names bound per limiter (fold), compiled to a small stack program (compile) and
// evaluated per request without allocating (program.eval).

// Operators of an expression node.
const (
	opNum byte = iota // a number, n
	opVar             // a variable, v
	opNeg             // -l
	opAdd             // l + r
	opSub             // l - r
	opMul             // l * r
	opDiv             // l / r, floor division
)

var opText = [...]string{opAdd: "+", opSub: "-", opMul: "*", opDiv: "/"}

// expr is a parsed integer expression.
type expr struct {
	op   byte
	n    int64
	v    tvar
	l, r *expr
}

// maxExprDepth bounds the nesting of an expression (and so the evaluation stack).
const maxExprDepth = 16

// exprParser is a recursive-descent parser over the text of one expression.
type exprParser struct {
	s     string
	i     int
	depth int
}

// parseExpr parses s: expr := term {(+|-) term}; term := unary {(*|/) unary};
// unary := - unary | primary; primary := number | name | ( expr ).
func parseExpr(s string) (*expr, error) {
	p := &exprParser{s: s}
	e, err := p.sum()
	if err != nil {
		return nil, err
	}
	p.space()
	if p.i < len(p.s) {
		if p.s[p.i] == ')' {
			return nil, fmt.Errorf("unbalanced parentheses: %q has a \")\" without its \"(\"", s)
		}
		return nil, fmt.Errorf("unexpected %q after %q", p.s[p.i:], strings.TrimSpace(p.s[:p.i]))
	}
	return e, nil
}

func (p *exprParser) space() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

// peek returns the next byte after spaces, or 0 at the end.
func (p *exprParser) peek() byte {
	p.space()
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *exprParser) sum() (*expr, error) {
	l, err := p.term()
	if err != nil {
		return nil, err
	}
	for {
		var op byte
		switch p.peek() {
		case '+':
			op = opAdd
		case '-':
			op = opSub
		default:
			return l, nil
		}
		p.i++
		r, err := p.term()
		if err != nil {
			return nil, err
		}
		l = &expr{op: op, l: l, r: r}
	}
}

func (p *exprParser) term() (*expr, error) {
	l, err := p.unary()
	if err != nil {
		return nil, err
	}
	for {
		var op byte
		switch p.peek() {
		case '*':
			op = opMul
		case '/':
			op = opDiv
		default:
			return l, nil
		}
		p.i++
		r, err := p.unary()
		if err != nil {
			return nil, err
		}
		l = &expr{op: op, l: l, r: r}
	}
}

func (p *exprParser) unary() (*expr, error) {
	if p.peek() == '-' {
		p.i++
		if p.depth++; p.depth > maxExprDepth {
			return nil, fmt.Errorf("nested more than %d deep", maxExprDepth)
		}
		e, err := p.unary()
		p.depth--
		if err != nil {
			return nil, err
		}
		return &expr{op: opNeg, l: e}, nil
	}
	return p.primary()
}

func (p *exprParser) primary() (*expr, error) {
	c := p.peek()
	start := p.i
	switch {
	case c == 0:
		if start == 0 {
			return nil, errors.New("empty")
		}
		return nil, fmt.Errorf("expected a number, a name or \"(\" after %q", strings.TrimSpace(p.s))
	case c == '(':
		p.i++
		if p.depth++; p.depth > maxExprDepth {
			return nil, fmt.Errorf("nested more than %d deep", maxExprDepth)
		}
		e, err := p.sum()
		p.depth--
		if err != nil {
			return nil, err
		}
		if p.peek() != ')' {
			return nil, fmt.Errorf("unbalanced parentheses: a \"(\" in %q has no \")\"", p.s)
		}
		p.i++
		return e, nil
	case isDigit(c):
		for p.i < len(p.s) && isDigit(p.s[p.i]) {
			p.i++
		}
		if p.i < len(p.s) && (p.s[p.i] == '_' || p.s[p.i] == '.' || isLetter(p.s[p.i])) {
			return nil, fmt.Errorf("%q is not a whole number", p.word(start))
		}
		n, err := strconv.ParseInt(p.s[start:p.i], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("number %s is out of range (int64)", p.s[start:p.i])
		}
		return &expr{op: opNum, n: n}, nil
	case c == '_' || isLetter(c):
		for p.i < len(p.s) && (p.s[p.i] == '_' || isLetter(p.s[p.i]) || isDigit(p.s[p.i])) {
			p.i++
		}
		name := p.s[start:p.i]
		v := lookupVar(name)
		switch {
		case v == tLit:
			var ints []string
			for _, tv := range templateVars {
				if isInt(tv.v) {
					ints = append(ints, tv.name)
				}
			}
			if s := Suggest(name, ints); s != "" {
				return nil, fmt.Errorf("unknown name %s (did you mean %s?)", name, s)
			}
			return nil, fmt.Errorf("unknown name %s; expressions take %s and whole numbers", name, intNames)
		case !isInt(v):
			return nil, fmt.Errorf("%s is not an integer; expressions take %s and whole numbers", name, intNames)
		}
		return &expr{op: opVar, v: v}, nil
	}
	return nil, fmt.Errorf("unexpected %q in %q", c, p.s)
}

// word returns the run of name or number characters from start, for messages.
func (p *exprParser) word(start int) string {
	i := start
	for i < len(p.s) && (p.s[i] == '_' || p.s[i] == '.' || isLetter(p.s[i]) || isDigit(p.s[i])) {
		i++
	}
	return p.s[start:i]
}

// vars returns the variables e reads, one bit each.
func (e *expr) vars() uint32 {
	if e == nil {
		return 0
	}
	if e.op == opVar {
		return 1 << e.v
	}
	return e.l.vars() | e.r.vars()
}

// fold returns e with the variables bound in b (nil: none) replaced by their values and every
// operation on constants computed. Division by a constant zero is an error even where the
// dividend is not constant; so is a constant result outside int64.
func (e *expr) fold(b *bindings) (*expr, error) {
	switch e.op {
	case opNum:
		return e, nil
	case opVar:
		if b != nil && b.bound[e.v] {
			return &expr{op: opNum, n: b.ints[e.v]}, nil
		}
		return e, nil
	case opNeg:
		l, err := e.l.fold(b)
		if err != nil {
			return nil, err
		}
		if l.op == opNum {
			n, err := arith(opSub, 0, l.n)
			if err != nil {
				return nil, err
			}
			return &expr{op: opNum, n: n}, nil
		}
		return &expr{op: opNeg, l: l}, nil
	}
	l, err := e.l.fold(b)
	if err != nil {
		return nil, err
	}
	r, err := e.r.fold(b)
	if err != nil {
		return nil, err
	}
	if e.op == opDiv && r.op == opNum && r.n == 0 {
		return nil, errors.New("division by zero")
	}
	if l.op == opNum && r.op == opNum {
		n, err := arith(e.op, l.n, r.n)
		if err != nil {
			return nil, err
		}
		return &expr{op: opNum, n: n}, nil
	}
	return &expr{op: e.op, l: l, r: r}, nil
}

// errOverflow is an expression's result outside int64.
var errOverflow = errors.New("overflow: the result is outside the int64 range")

// arith returns a op b, with floor division; overflow and division by zero are errors.
func arith(op byte, a, b int64) (int64, error) {
	switch op {
	case opAdd:
		if b > 0 && a > math.MaxInt64-b || b < 0 && a < math.MinInt64-b {
			return 0, errOverflow
		}
		return a + b, nil
	case opSub:
		if b < 0 && a > math.MaxInt64+b || b > 0 && a < math.MinInt64+b {
			return 0, errOverflow
		}
		return a - b, nil
	case opMul:
		if a == 0 || b == 0 {
			return 0, nil
		}
		c := a * b
		if c/b != a || (a == -1 && b == math.MinInt64) || (b == -1 && a == math.MinInt64) {
			return 0, errOverflow
		}
		return c, nil
	case opDiv:
		if b == 0 {
			return 0, errors.New("division by zero")
		}
		if a == math.MinInt64 && b == -1 {
			return 0, errOverflow
		}
		q, _ := floorDivMod(a, b)
		return q, nil
	}
	return 0, fmt.Errorf("unknown operator %d", op)
}

// String renders e with full parentheses, for tests and messages.
func (e *expr) String() string {
	switch e.op {
	case opNum:
		return strconv.FormatInt(e.n, 10)
	case opVar:
		for _, tv := range templateVars {
			if tv.v == e.v {
				return tv.name
			}
		}
		return "?"
	case opNeg:
		return "-" + e.l.String()
	}
	return "(" + e.l.String() + " " + opText[e.op] + " " + e.r.String() + ")"
}

// instr is one instruction of a compiled expression: push a number or a variable, or apply an
// operator to the top of the stack.
type instr struct {
	op byte
	v  tvar
	n  int64
}

// program is an expression compiled to postfix order; eval runs it on a stack held in an array
// of maxStack entries (no allocation).
type program []instr

// maxStack bounds the evaluation stack. Without parentheses an expression needs at most 3
// entries (a sum's left operand, a product's left operand, the operand being read); each level
// of parentheses or unary minus, at most maxExprDepth, adds at most 2.
const maxStack = 2*maxExprDepth + 3

// compile returns e in postfix order, or an error when it would need more than maxStack entries
// (which parseExpr's depth bound rules out).
func (e *expr) compile() (program, error) {
	var p program
	var walk func(*expr) int // returns the stack entries the subexpression needs
	walk = func(e *expr) int {
		switch e.op {
		case opNum:
			p = append(p, instr{op: opNum, n: e.n})
			return 1
		case opVar:
			p = append(p, instr{op: opVar, v: e.v})
			return 1
		case opNeg:
			n := walk(e.l)
			p = append(p, instr{op: opNeg})
			return n
		}
		l := walk(e.l)
		r := walk(e.r)
		p = append(p, instr{op: e.op})
		return max(l, 1+r)
	}
	if walk(e) > maxStack {
		return nil, fmt.Errorf("too deeply nested (more than %d operands pending)", maxStack)
	}
	return p, nil
}

// eval runs p with the per-request values of r.
func (p program) eval(r *reqVars) (int64, error) {
	var st [maxStack]int64
	sp := 0
	for _, in := range p {
		switch in.op {
		case opNum:
			st[sp] = in.n
			sp++
		case opVar:
			st[sp] = r.int(in.v)
			sp++
		case opNeg:
			n, err := arith(opSub, 0, st[sp-1])
			if err != nil {
				return 0, err
			}
			st[sp-1] = n
		default:
			n, err := arith(in.op, st[sp-2], st[sp-1])
			if err != nil {
				return 0, err
			}
			sp--
			st[sp-1] = n
		}
	}
	return st[0], nil
}
