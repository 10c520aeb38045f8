// The Python guard through the public API, in the real sandbox (check mode, no pandas import):
// each forbidden construct is a guard_violation naming its rule, each allowed twin passes.
// The full corpus (78 cases) is runner_guard_test.py; these prove the C++ side carries it.
#include <gtest/gtest.h>

#include "quarry/sandbox/sandbox.h"
#include "support/test_support.h"

namespace quarry::sandbox {
namespace {

class PythonGuardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    QUARRY_SKIP_WITHOUT_SANDBOX(NamespaceUnavailableReason());
    options_.workdir = dir_.path() / "work";
  }
  PythonResult Check(const std::string& code) {
    auto r = CheckPython(code, options_);
    EXPECT_TRUE(r.has_value()) << r.error().message;
    return r.value_or(PythonResult{});
  }
  void ExpectRule(const std::string& code, const std::string& rule) {
    const PythonResult r = Check(code);
    EXPECT_EQ(r.failure, FailureClass::kGuardViolation) << code;
    EXPECT_EQ(r.rule, rule) << code << "\n" << r.message;
    EXPECT_NE(r.message.find(rule), std::string::npos) << r.message;
  }
  void ExpectAllowed(const std::string& code) {
    const PythonResult r = Check(code);
    EXPECT_EQ(r.failure, FailureClass::kNone) << code << "\n" << r.message;
  }
  quarry::testing::TempDir dir_;
  Options options_;
};

TEST_F(PythonGuardTest, Imports) {
  ExpectRule("import os", "import_allowlist");
  ExpectRule("import os.path as p", "import_allowlist");
  ExpectRule("from os import system", "import_allowlist");
  ExpectRule("import subprocess", "import_allowlist");
  ExpectAllowed("import pandas as pd\nfrom collections import Counter");
  ExpectAllowed("# import os\ns = 'import os'\nprint(s)");
  const PythonResult r = Check("import socket");
  EXPECT_NE(r.message.find("pandas, numpy, matplotlib"), std::string::npos) << r.message;
}

TEST_F(PythonGuardTest, BuiltinsDundersAndModules) {
  for (const char* code : {"eval('1')", "f = exec", "compile('1', 'x', 'eval')",
                           "getattr(pd, 'io')", "globals()", "vars()", "breakpoint()", "input()"}) {
    ExpectRule(code, "forbidden_builtin");
  }
  ExpectAllowed("evaluation = 1\nprint(evaluation)");
  ExpectRule("().__class__.__bases__[0].__subclasses__()", "dunder_access");
  ExpectRule("print(__builtins__)", "dunder_access");
  ExpectAllowed("x = df._values if False else 1");
  ExpectRule("pd.io.common.os.system('id')", "module_attribute");
  ExpectRule("np.ctypeslib", "module_attribute");
  ExpectAllowed("print(np.linalg.norm([3, 4]))");
}

TEST_F(PythonGuardTest, OpenAndQueryNeedLiterals) {
  ExpectRule("open('/etc/passwd')", "open_literal");
  ExpectRule("open('../x')", "open_literal");
  ExpectRule("open('out.txt', 'w')", "open_literal");
  ExpectRule("name = 'a'\nopen(name)", "open_literal");
  ExpectAllowed("open('notes.txt')");
  ExpectAllowed("open('data.csv', 'rb')");
  ExpectRule("e = 'a > 1'\ndf.query(e)", "query_eval_literal");
  ExpectRule("df.query(\"@pd.io.common.os.system('id')\")", "query_eval_literal");
  ExpectRule("pd.eval(\"__import__('os')\")", "query_eval_literal");
  ExpectAllowed("df.query('age > 30')\ndf.eval('c = a + b')");
  ExpectRule("np.load('p.npy', None, True)", "pickle_load");
  ExpectRule("args = ('p.npy', None, True)\nnp.load(*args)", "pickle_load");
  ExpectRule("np.load('p.npy', allow_pickle=True)", "pickle_load");
  ExpectAllowed("import json\nx = np.load('p.npy')\ny = json.load(open('a.json'))");
}

TEST_F(PythonGuardTest, SyntaxErrorsAreNotViolations) {
  const PythonResult r = Check("print(1\n");
  EXPECT_EQ(r.failure, FailureClass::kSyntaxError);
  EXPECT_NE(r.message.find("line 1"), std::string::npos) << r.message;
}

TEST(SandboxFallbackTest, RefusesWithoutNamespacesUnlessAllowed) {
  quarry::testing::TempDir dir;
  Options o;
  o.workdir = dir.path() / "work";
  o.use_namespaces = false;
  auto refused = RunPython("print(1)", o);
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code, Error::Code::kUsage);
  EXPECT_NE(refused.error().message.find("--allow-unisolated"), std::string::npos);

  o.allow_unisolated = true;
  o.python_guard = false;  // the seccomp filter must hold on its own here too
  auto r = RunPython(
      "import socket, os\nprint(os.environ.get('HOME'))\n"
      "try:\n    socket.socket(socket.AF_INET)\nexcept PermissionError:\n    print('denied')\n",
      o);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->isolation, Isolation::kRlimitsOnly);
  EXPECT_NE(r->stdout_text.find("denied"), std::string::npos) << r->stdout_text << r->message;
  EXPECT_NE(RenderObservation(*r).find("no namespaces"), std::string::npos);
}

}  // namespace
}  // namespace quarry::sandbox
