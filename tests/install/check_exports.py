#!/usr/bin/env python3
"""libvkgmm.so exports the public API and nothing else.

usage: check_exports.py <libvkgmm.so> <public include dir (the one holding vkgmm/)>

Reads the library's dynamic symbol table (nm -D --defined-only, demangled) and checks every symbol:
  - a C function: `vkgmm_*` declared in vkgmm/vkgmm.h or a C header it includes;
  - a C++ name in namespace vkgmm (functions, typeinfo and vtable of vkgmm::Error): every part of its
    qualified name is a name the public headers' code (comments stripped) declares, and none is a private
    implementation type (Impl, State);
  - a weak instantiation of a standard library template (std::, __gnu_cxx::): unavoidable with libstdc++,
    allowed as long as every vkgmm name it mentions passes the rule above;
  - the linker's own (_init, _fini, _end, ...).
Anything else (an internal helper, a spirv array, a reference or npy routine) is a leak. Every C function
vkgmm.h declares must be exported too. The rules are first run on known good and bad names, so that the
check cannot pass by accepting everything.
"""
import pathlib
import re
import subprocess
import sys

LINKER = {"_init", "_fini", "_edata", "_end", "__bss_start"}
PRIVATE_PARTS = {"Impl", "State"}
SPECIAL_PREFIXES = ("typeinfo name for ", "typeinfo for ", "vtable for ", "VTT for ", "guard variable for ")
WEAK_TYPES = set("WwVvu")


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def public_names(include_dir):
    """(C functions declared in the C headers, vkgmm.h and those it includes, identifiers in the code of
    every public header)."""
    headers = sorted(pathlib.Path(include_dir, "vkgmm").glob("*.h*"))
    if not headers:
        sys.exit(f"no public headers under {include_dir}/vkgmm")
    code = {h.name: strip_comments(h.read_text()) for h in headers}
    c_functions = set()
    c_code = " ".join(re.sub(r"^\s*#.*$", " ", text, flags=re.M) for name, text in code.items() if name.endswith(".h"))
    for statement in re.split(r"[;{}]", c_code):
        name = re.search(r"\b(vkgmm_\w+)\s*\(", statement)
        if name and not statement.lstrip().startswith("typedef"):  # not a callback type
            c_functions.add(name.group(1))
    words = set()
    for text in code.values():
        words.update(re.findall(r"[A-Za-z_]\w*", text))
    return c_functions, words


def vkgmm_names_ok(text, words):
    """Every vkgmm::a::b::c in text names public parts only; returns the first offending name or None."""
    for qualified in re.findall(r"vkgmm(?:::~?[A-Za-z_]\w*|::operator\W+)+", text):
        for part in qualified.split("::")[1:]:
            part = part.lstrip("~")
            if part.startswith("operator"):
                continue
            if part in PRIVATE_PARTS or part not in words:
                return qualified
    return None


def verdict(kind, name, c_functions, words):
    """None when the symbol is allowed, else why not."""
    if name in LINKER:
        return None
    if re.fullmatch(r"vkgmm_\w+", name):
        return None if name in c_functions else "a vkgmm_ C function no C header declares"
    entity = name
    for prefix in SPECIAL_PREFIXES:
        if entity.startswith(prefix):
            entity = entity[len(prefix):]
            break
    entity = re.sub(r"\[abi:\w+\]", "", entity)
    # A function template's instantiation demangles with its return type first ("void std::f<int>(int)").
    entity = re.sub(r"^[\w:]+(?:<[^()]*>)?[\s*&]*\s(?=(?:std::|__gnu_cxx::|vkgmm::))", "", entity)
    if entity.startswith("vkgmm::"):
        bad = vkgmm_names_ok(entity, words)
        return None if bad is None else f"{bad} is not public API"
    if entity.startswith(("std::", "__gnu_cxx::")):
        if kind not in WEAK_TYPES:
            return "a strong definition of a standard library name"
        bad = vkgmm_names_ok(entity, words)
        return None if bad is None else f"instantiated with {bad}, which is not public API"
    return "outside namespace vkgmm and not a vkgmm_ C function"


def self_test(c_functions, words):
    good = [("T", "vkgmm_gmm_plan_create"), ("T", "vkgmm::GmmPlan::sizes() const"),
            ("T", "vkgmm::Buffer::~Buffer()"), ("T", "vkgmm::Context::operator=(vkgmm::Context&&)"),
            ("V", "typeinfo for vkgmm::Error"), ("W", "std::type_info::operator==(std::type_info const&) const"),
            ("W", "void std::__detail::__to_chars_10_impl<unsigned int>(char*, unsigned int, unsigned int)"),
            ("T", "_init")]
    bad = [("T", "vkgmm_not_declared_anywhere"), ("T", "vkgmm::make_group_metadata(int)"),
           ("T", "vkgmm::check_vk(VkResult, char const*)"), ("T", "vkgmm::Context::Impl::queue_submit()"),
           ("T", "vkgmm::GmmPlan::State::record() const"), ("T", "vkgmm::reference::gmm(int)"),
           ("T", "vkgmm::npy::read(std::string const&)"), ("R", "vkgmm::spirv::gmm"),
           ("T", "helper_without_namespace"), ("T", "std::vector<int>::push_back(int const&)"),
           ("W", "std::shared_ptr<vkgmm::Context::Impl>::~shared_ptr()"),
           ("W", "void vkgmm::detail::helper<int>(int)"), ("T", "void std::sort<int*>(int*, int*)")]
    wrong = [n for k, n in good if verdict(k, n, c_functions, words)]
    wrong += [n for k, n in bad if not verdict(k, n, c_functions, words)]
    if wrong:
        sys.exit("check_exports.py rules are broken; misjudged: " + "; ".join(wrong))


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    lib, include_dir = sys.argv[1], sys.argv[2]
    c_functions, words = public_names(include_dir)
    if not c_functions:
        sys.exit(f"no vkgmm_ functions found in {include_dir}/vkgmm/vkgmm.h")
    self_test(c_functions, words)

    out = subprocess.run(["nm", "-D", "--defined-only", "-C", lib], check=True, capture_output=True,
                         text=True).stdout
    leaks, exported = [], set()
    for line in out.splitlines():
        fields = line.split(maxsplit=2)
        if len(fields) == 2:  # no address
            fields.insert(0, "")
        if len(fields) != 3:
            continue
        _, kind, name = fields
        exported.add(name)
        why = verdict(kind, name, c_functions, words)
        if why:
            leaks.append(f"  {kind} {name}: {why}")
    missing = sorted(c_functions - exported)
    if leaks:
        print(f"{lib} exports {len(leaks)} symbol(s) outside the public API:\n" + "\n".join(leaks))
    if missing:
        print("C functions vkgmm.h declares but the library does not export (VKGMM_API missing?): "
              + ", ".join(missing))
    if leaks or missing:
        sys.exit(1)
    print(f"{lib}: {len(exported)} exported symbols, all public API ({len(c_functions)} C functions)")


if __name__ == "__main__":
    main()
