"""A Griffe extension for fastgrad's API reference (loaded by mkdocstrings, see mkdocs.yml).

Two adjustments, both about how the source reads versus how users call it:

* An operator defined as ``@unary_to_nary def grad(fun, x)`` is called as
  ``grad(fun, argnum=0)``: its documented signature gets ``argnum=0`` in place of ``x``.
* Docstrings are plain text with interactive examples (``>>>`` lines, the doctest
  convention), while mkdocstrings renders docstrings as Markdown, where ``>`` starts a
  quotation: each run of example lines is wrapped in a fenced ``pycon`` code block.
"""

import griffe

_NARY_DECORATORS = ("unary_to_nary",)


def _is_nary(func):
    for decorator in func.decorators:
        if str(decorator.value).split(".")[-1] in _NARY_DECORATORS:
            return True
    return False


def _fence_examples(text):
    lines, out, i, in_fence = text.splitlines(), [], 0, False
    while i < len(lines):
        if lines[i].lstrip().startswith("```"):
            in_fence = not in_fence
        if not in_fence and lines[i].lstrip().startswith(">>>"):
            indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
            block = []
            while i < len(lines) and lines[i].strip():
                block.append(lines[i][len(indent) :] if lines[i].startswith(indent) else lines[i])
                i += 1
            if out and out[-1].strip():
                out.append("")
            out.extend([indent + "```pycon"] + [indent + b for b in block] + [indent + "```", ""])
        else:
            out.append(lines[i])
            i += 1
    return "\n".join(out)


def _walk(obj, seen):
    if obj.path in seen:
        return
    seen.add(obj.path)
    if obj.docstring is not None and ">>>" in obj.docstring.value:
        obj.docstring.value = _fence_examples(obj.docstring.value)
    for member in obj.members.values():
        if not member.is_alias:
            _walk(member, seen)


class FastgradDocs(griffe.Extension):
    def on_function_instance(self, *, node, func, agent, **kwargs):
        if _is_nary(func) and len(func.parameters) >= 2:
            params = list(func.parameters)
            argnum = griffe.Parameter("argnum", kind=griffe.ParameterKind.positional_or_keyword, default="0")
            func.parameters = griffe.Parameters(params[0], argnum, *params[2:])

    def on_package(self, *, pkg, **kwargs):  # Griffe 2
        _walk(pkg, set())

    def on_package_loaded(self, *, pkg, **kwargs):  # Griffe 1
        _walk(pkg, set())
