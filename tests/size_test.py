"""Checks that the code stays in pieces a reader can hold: no source or test
file over 700 lines, no function over 120 (C++ function bodies, Python
functions and methods), as issue 29 set them. Lists every offender with its
length and fails if there is one.

Usage: size_test.py ROOT
"""
import ast
import os
import re
import sys

MAX_FILE_LINES = 700
MAX_FUNCTION_LINES = 120
FOLDERS = ("base", "simulator", "planner", "service", "server", "client", "tests", "scripts",
           "docker", "deploy")
SOURCE = (".cc", ".h", ".py", ".sh", ".js", ".proto")


def strip_cpp(text):
    """The C++ text with comments, string and character literals blanked
    (newlines kept), so that braces and parentheses in them do not count."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or
                                                          text[i - 1] == "_")):
            delim = text[i + 2:text.find("(", i)]
            j = text.find(")" + delim + '"', i)
            j = n if j < 0 else j + len(delim) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "'" and i > 0 and (text[i - 1].isdigit() or re.search(
                r"0[xX][0-9a-fA-F']*$", text[max(0, i - 24):i])):
            out.append(c)  # a digit separator (1'000'000)
            i += 1
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(" " * (j + 1 - i))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def cpp_functions(text):
    """(first line, length, header) of each outermost function body: a brace
    block whose header (the text since the last ';', '{' or '}') holds a ')'
    and is not a control statement, outside other function bodies; namespace,
    class, struct and enum bodies are looked into."""
    code = strip_cpp(text)
    found = []
    stack = []  # kinds of the open blocks: "scope", "function", "other"
    header_start = 0
    line_of = [0] * (len(code) + 1)
    line = 1
    for k, ch in enumerate(code):
        line_of[k] = line
        if ch == "\n":
            line += 1
    function_start = None
    for k, ch in enumerate(code):
        if ch in ";{}":
            header = code[header_start:k]
            if ch == "{":
                if "function" in stack:
                    kind = "other"
                elif re.search(r"\b(namespace|class|struct|union|enum)\b", header) and \
                        "(" not in header.split("{")[0].split(":")[0]:
                    kind = "scope"
                elif ")" in header and not re.match(r"\s*(if|for|while|switch|catch|do)\b",
                                                    header):
                    kind = "function"
                    first = header_start + (len(header) - len(header.lstrip()))
                    named = [x for x in header.strip().split("\n") if "(" in x]
                    function_start = (line_of[first], (named or [header.strip()])[0].strip())
                else:
                    kind = "other"
                stack.append(kind)
            elif ch == "}" and stack:
                kind = stack.pop()
                if kind == "function" and "function" not in stack:
                    first_line, name = function_start
                    found.append((first_line, line_of[k] - first_line + 1, name))
            header_start = k + 1
    return found


def python_functions(text):
    tree = ast.parse(text)
    return [(node.lineno, node.end_lineno - node.lineno + 1, node.name)
            for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]


def main():
    root = sys.argv[1]
    problems = []
    files = 0
    for folder in FOLDERS:
        for path, dirs, names in os.walk(os.path.join(root, folder)):
            dirs[:] = [d for d in dirs if d not in ("node_modules", "__pycache__")]
            for name in sorted(names):
                if not name.endswith(SOURCE):
                    continue
                full = os.path.join(path, name)
                relative = os.path.relpath(full, root)
                with open(full, encoding="utf-8") as f:
                    text = f.read()
                files += 1
                lines = text.count("\n")
                if lines > MAX_FILE_LINES:
                    problems.append(f"{relative}: {lines} lines (at most {MAX_FILE_LINES})")
                if name.endswith((".cc", ".h")):
                    functions = cpp_functions(text)
                elif name.endswith(".py"):
                    functions = python_functions(text)
                else:
                    functions = []
                for first, length, what in functions:
                    if length > MAX_FUNCTION_LINES:
                        problems.append(f"{relative}:{first}: a function of {length} lines "
                                        f"(at most {MAX_FUNCTION_LINES}): {what[:70]}")
    for p in problems:
        print(p)
    print(f"{files} files checked, {len(problems)} over the limits")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
