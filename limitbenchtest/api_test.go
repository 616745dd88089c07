package limitbenchtest_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// A library user can call every exported name of limitbenchtest, and of verify all but the
// aggregators the limitbench command feeds from its load generator, without naming a type of
// an internal package (which another module cannot import).
func TestNoInternalTypes(t *testing.T) {
	for _, tt := range []struct {
		dir     string
		harness []string // exported names that take the harness's internal types, for the CLI
	}{
		{".", nil},
		{"../verify", []string{"AdmissionLog", "NewAdmissionLog", "StreamLog", "NewStreamLog"}},
	} {
		got := internalUses(t, tt.dir)
		for name := range got {
			if !slices.Contains(tt.harness, name) {
				t.Errorf("%s: exported %s uses an internal package's type (%s)", tt.dir, name, got[name])
			}
		}
		for _, name := range tt.harness {
			if got[name] == "" {
				t.Errorf("%s: %s no longer uses an internal type: drop it from the harness list", tt.dir, name)
			}
		}
	}
}

// internalUses returns the exported declarations of the package in dir (its non-test files)
// whose signature, type or exported fields name an identifier of an internal package: the
// declaration's name (a method's receiver type's) to the first such identifier.
func internalUses(t *testing.T, dir string) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	uses := map[string]string{}
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		internal := map[string]bool{} // import names of internal packages
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if strings.Contains(p, "/internal/") {
				name := p[strings.LastIndex(p, "/")+1:]
				if imp.Name != nil {
					name = imp.Name.Name
				}
				internal[name] = true
			}
		}
		note := func(name string, n ast.Node) {
			ast.Inspect(n, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok {
					if x, ok := sel.X.(*ast.Ident); ok && internal[x.Name] && uses[name] == "" {
						uses[name] = x.Name + "." + sel.Sel.Name
					}
				}
				if _, ok := n.(*ast.BlockStmt); ok {
					return false // a body is not a signature
				}
				return true
			})
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				name := d.Name.Name
				if d.Recv != nil {
					name = receiverName(d.Recv.List[0].Type)
					if !ast.IsExported(name) {
						continue
					}
				}
				note(name, d.Type)
			case *ast.GenDecl:
				for _, s := range d.Specs {
					if ts, ok := s.(*ast.TypeSpec); ok && ts.Name.IsExported() {
						note(ts.Name.Name, exportedPart(ts.Type))
					}
					if vs, ok := s.(*ast.ValueSpec); ok && vs.Type != nil && vs.Names[0].IsExported() {
						note(vs.Names[0].Name, vs.Type)
					}
				}
			}
		}
	}
	return uses
}

// receiverName returns the name of a method's receiver type.
func receiverName(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

// exportedPart returns a struct type with only its exported fields (embedded ones included), or
// e itself when it is not a struct.
func exportedPart(e ast.Expr) ast.Node {
	st, ok := e.(*ast.StructType)
	if !ok {
		return e
	}
	out := &ast.FieldList{}
	for _, f := range st.Fields.List {
		if len(f.Names) == 0 || slices.ContainsFunc(f.Names, (*ast.Ident).IsExported) {
			out.List = append(out.List, f)
		}
	}
	return out
}
