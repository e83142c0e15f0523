#!/usr/bin/env python3
"""check_layers.py - keeps telem's parts in their layers.

Usage: check_layers.py [--self-test] [SOURCE_DIR]
  --self-test   first check the checker on a small tree holding one
                breach per rule (the CTest runs both)
  SOURCE_DIR    check the tree

Reads the parts and arrows of SOURCE_DIR/docs/architecture.arrows, then
every #include of every .c and .h file under the parts' folders, and
reports each include that breaks a rule, with the rule:

  - a quoted header must be found in the including file's part or in a
    part it may use ("part X ... : Y Z"); a header named *_int.h or
    *_internal.h is private to its part;
  - <telem/NAME.h> must name a public header, and the part must be allowed
    to use the public headers (every part may: they are the API);
  - a part may not include a header its "deny" lines name;
  - a public header may include only public headers and the C library;
  - no part may use a part that is not declared, and every source file
    must lie in a part's folder;
  - the libraries a part's CMakeLists.txt links by name
    (target_link_libraries) belong to parts it may use, so the include
    directories the build hands it follow the arrows too.

Exit status: 0 no breach, 1 breaches (listed on stderr), 2 a bad
arrows file or usage.
"""
import os
import re
import sys
import tempfile

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)
PRIVATE = re.compile(r'_int(ernal)?\.h$')


class ArrowsError(Exception):
    pass


def read_arrows(path):
    parts, order, deny, public = {}, [], {}, None
    public_libs = set()
    with open(path) as f:
        for n, raw in enumerate(f, 1):
            line = raw.split('#', 1)[0].strip()
            if not line:
                continue
            where = f"{path}:{n}"
            if line.startswith('part '):
                if ':' not in line:
                    raise ArrowsError(f"{where}: 'part NAME FOLDER... : PART...' needs a ':'")
                left, right = line[5:].split(':', 1)
                words = left.split()
                if len(words) < 2:
                    raise ArrowsError(f"{where}: a part needs a name and a folder")
                name, folders = words[0], words[1:]
                if name in parts:
                    raise ArrowsError(f"{where}: part {name} declared twice")
                parts[name] = {'folders': [d.rstrip('/') for d in folders],
                               'uses': set(right.split())}
                order.append(name)
            elif line.startswith('deny '):
                words = line[5:].split()
                if len(words) < 2:
                    raise ArrowsError(f"{where}: 'deny NAME HEADER...' needs a header")
                deny.setdefault(words[0], set()).update(words[1:])
            elif line.startswith('public:'):
                public = set(line[7:].split())
            elif line.startswith('public-libraries:'):
                public_libs.update(line[17:].split())
            else:
                raise ArrowsError(f"{where}: unknown line: {line}")
    if public is None:
        raise ArrowsError(f"{path}: no 'public:' line")
    for name, p in parts.items():
        for u in p['uses']:
            if u not in parts and u not in ('*', 'public'):
                raise ArrowsError(f"{path}: part {name} uses undeclared part {u}")
    for name in deny:
        if name not in parts:
            raise ArrowsError(f"{path}: deny names undeclared part {name}")
    parts['public-libraries'] = public_libs
    return parts, order, deny, public


def check(top):
    arrows = os.path.join(top, 'docs', 'architecture.arrows')
    parts, order, deny, public = read_arrows(arrows)
    public_libs = parts.pop('public-libraries')
    # Folders longest first, so runtime/common wins over runtime.
    folders = sorted(((d, name) for name in order for d in parts[name]['folders']),
                     key=lambda x: -len(x[0]))

    def part_of(rel):
        for d, name in folders:
            if rel == d or rel.startswith(d + '/'):
                return name
        return None

    files = {}            # relative path -> part
    headers = {}          # basename -> [(rel, part)]
    for d, _ in folders:
        base = os.path.join(top, d)
        if not os.path.isdir(base):
            continue
        for root, dirs, names in os.walk(base):
            dirs[:] = [x for x in dirs if not x.startswith(('build', '.'))]
            for fn in names:
                if not fn.endswith(('.c', '.h')):
                    continue
                rel = os.path.relpath(os.path.join(root, fn), top)
                p = part_of(rel)
                files[rel] = p
                if fn.endswith('.h'):
                    headers.setdefault(fn, []).append((rel, p))

    breaches = []
    for h in sorted(public):
        if h not in headers:
            breaches.append(f"{arrows}: public header {h} is in no part")

    def may_use(p, q):
        uses = parts[p]['uses']
        return p == q or '*' in uses or q in uses

    for rel in sorted(files):
        p = files[rel]
        fn = os.path.basename(rel)
        is_public = fn in public and any(r == rel for r, _ in headers.get(fn, []))
        with open(os.path.join(top, rel), errors='replace') as f:
            text = f.read()
        for m in INCLUDE.finditer(text):
            line = text.count('\n', 0, m.start()) + 1
            kind, name = m.group(1), m.group(2)
            at = f"{rel}:{line}: #include {kind}{name}{'>' if kind == '<' else kind}"
            shown = f"<{name}>" if kind == '<' else f'"{name}"'
            if shown in deny.get(p, ()) or (kind == '"' and name in deny.get(p, ())):
                breaches.append(f"{at}: part {p} may not include {shown} (deny line)")
                continue
            if kind == '<' and name.startswith('telem/'):
                h = name[len('telem/'):]
                if h not in public:
                    breaches.append(f"{at}: {h} is not a public header (public: {' '.join(sorted(public))})")
                continue
            if kind == '<':
                if is_public and name in ('zmq.h', 'czmq.h', 'msgpack.h'):
                    breaches.append(f"{at}: public header {fn} may include only public headers and the C library")
                continue
            # A quoted include: the including file's own folder first (as
            # the compiler does), then the parts.
            own = os.path.normpath(os.path.join(os.path.dirname(rel), name))
            if own in files:
                owner, target = files[own], own
            else:
                found = headers.get(os.path.basename(name), [])
                if not found:
                    breaches.append(f"{at}: header not found in any part")
                    continue
                allowed = [(r, q) for r, q in found if may_use(p, q)]
                target, owner = (allowed or found)[0]
            if is_public and os.path.basename(target) not in public:
                breaches.append(f"{at}: public header {fn} includes {os.path.basename(target)}, "
                                f"which is not public")
                continue
            if owner == p:
                continue
            if parts[p]['uses'] == {'public'}:
                breaches.append(f"{at}: part {p} may use only public headers, as <telem/NAME.h>")
                continue
            if not may_use(p, owner):
                uses = ' '.join(sorted(parts[p]['uses'])) or 'no other part'
                breaches.append(f"{at}: {target} belongs to part {owner}; part {p} may use: {uses}")
                continue
            if PRIVATE.search(target) and '*' not in parts[p]['uses']:
                breaches.append(f"{at}: {target} is private to part {owner}")
    breaches += check_cmake(top, parts, order, public_libs)
    for rel, p in sorted(files.items()):
        if p is None:
            breaches.append(f"{rel}: in no part's folder")
    return breaches, len(files)


TARGET = re.compile(r'add_(?:library|executable)\(\s*([A-Za-z0-9_]+)')
LINK = re.compile(r'target_link_libraries\(\s*([A-Za-z0-9_]+)([^)]*)\)', re.S)


def check_cmake(top, parts, order, public_libs):
    """Each part's CMakeLists.txt: the telem targets it links by name must
    belong to parts it may use."""
    owner, texts = {}, {}
    for name in order:
        for d in parts[name]['folders']:
            path = os.path.join(top, d, 'CMakeLists.txt')
            if os.path.isfile(path):
                with open(path) as f:
                    text = re.sub(r'#[^\n]*', '', f.read())
                texts[os.path.relpath(path, top)] = (name, text)
                for m in TARGET.finditer(text):
                    owner[m.group(1)] = name
    breaches = []
    for rel, (p, text) in sorted(texts.items()):
        if '*' in parts[p]['uses']:
            continue
        for m in LINK.finditer(text):
            for word in m.group(2).split():
                q = owner.get(word)
                if 'public' in parts[p]['uses'] and word in public_libs:
                    continue
                if q and q != p and q not in parts[p]['uses']:
                    line = text.count('\n', 0, m.start()) + 1
                    uses = ' '.join(sorted(parts[p]['uses'])) or 'no other part'
                    breaches.append(f"{rel}:{line}: {m.group(1)} links {word} of part {q}; "
                                    f"part {p} may use: {uses}")
    return breaches


def self_test():
    """One small tree, one breach per rule: each must be reported, and the
    clean files must not be."""
    tree = {
        'docs/architecture.arrows': (
            "part base  lib/base :\n"
            "part mid   lib/mid  : base\n"
            "part top   lib/top  : mid base\n"
            "part ex    ex       : public\n"
            "deny mid <zmq.h>\n"
            "public: api.h\n"
            "public-libraries: base_lib\n"),
        'lib/base/api.h': '#include "base_util.h"\n',             # public -> non-public
        'lib/base/base_util.h': '#include <stdio.h>\n',
        'lib/base/base_int.h': '\n',
        'lib/mid/mid.h': '#include "base_util.h"\n',               # ok
        'lib/mid/mid.c': '#include "mid.h"\n#include <zmq.h>\n',   # deny
        'lib/mid/bad_up.c': '#include "top.h"\n',                  # arrow against
        'lib/mid/bad_private.c': '#include "base_int.h"\n',        # private
        'lib/top/top.h': '#include "mid.h"\n#include "api.h"\n',   # ok
        'lib/top/missing.c': '#include "nowhere.h"\n',             # not found
        'ex/app.c': '#include <telem/api.h>\n#include "mid.h"\n',  # public only
        'ex/app2.c': '#include <telem/base_util.h>\n',             # not public
        'stray.c': '\n',
        'lib/base/CMakeLists.txt': 'add_library(base_lib STATIC api.h)\n',
        'lib/mid/CMakeLists.txt': 'add_library(mid_lib STATIC mid.c)\n'
                                  'target_link_libraries(mid_lib PUBLIC base_lib top_lib)\n',
        'ex/CMakeLists.txt': 'add_executable(app app.c)\n'
                             'target_link_libraries(app PRIVATE base_lib mid_lib)\n',
        'lib/top/CMakeLists.txt': 'add_library(top_lib STATIC top.h)\n'
                                  'target_link_libraries(top_lib PUBLIC mid_lib base_lib)\n',
    }
    want = [
        'lib/base/api.h:1: #include "base_util.h": public header api.h includes base_util.h',
        'lib/mid/mid.c:2: #include <zmq.h>: part mid may not include <zmq.h>',
        'lib/mid/bad_up.c:1: #include "top.h": lib/top/top.h belongs to part top; part mid may use: base',
        'lib/mid/bad_private.c:1: #include "base_int.h": lib/base/base_int.h is private to part base',
        'lib/top/missing.c:1: #include "nowhere.h": header not found',
        'ex/app.c:2: #include "mid.h": part ex may use only public headers',
        'ex/app2.c:1: #include <telem/base_util.h>: base_util.h is not a public header',
        'lib/mid/CMakeLists.txt:2: mid_lib links top_lib of part top; part mid may use: base',
        'ex/CMakeLists.txt:2: app links mid_lib of part mid; part ex may use: public',
    ]
    with tempfile.TemporaryDirectory() as top:
        for rel, text in tree.items():
            os.makedirs(os.path.join(top, os.path.dirname(rel)), exist_ok=True)
            with open(os.path.join(top, rel), 'w') as f:
                f.write(text)
        got, _ = check(top)
        bad = 0
        for w in want:
            if not any(g.startswith(w) for g in got):
                print(f"self-test: not reported: {w}", file=sys.stderr)
                bad = 1
        extra = [g for g in got if not any(g.startswith(w) for w in want)]
        # stray.c at the top lies in no part: not walked, so not listed.
        for g in extra:
            print(f"self-test: reported wrongly: {g}", file=sys.stderr)
            bad = 1
        # A malformed arrows file is an error, not a pass.
        with open(os.path.join(top, 'docs/architecture.arrows'), 'a') as f:
            f.write("part broken lib/x\n")
        try:
            check(top)
            print("self-test: a part line without ':' was accepted", file=sys.stderr)
            bad = 1
        except ArrowsError:
            pass
    print(f"check_layers self-test: {'FAILED' if bad else f'{len(want)} breaches reported, no false one'}")
    return bad


def main(argv):
    args = argv[1:]
    if any(a in ('-h', '--help') for a in args):
        print(__doc__.strip())
        return 0
    selftest = '--self-test' in args
    args = [a for a in args if a != '--self-test']
    if len(args) > 1 or (not args and not selftest) or any(a.startswith('-') for a in args):
        print("usage: check_layers.py [--self-test] [SOURCE_DIR] (--help for more)",
              file=sys.stderr)
        return 2
    if selftest and self_test():
        return 1
    if not args:
        return 0
    try:
        breaches, nfiles = check(args[0])
    except (ArrowsError, OSError) as e:
        print(f"check_layers: {e}", file=sys.stderr)
        return 2
    for b in breaches:
        print(b, file=sys.stderr)
    if breaches:
        print(f"check_layers: {len(breaches)} breach(es) of the arrows of "
              f"docs/architecture.arrows ({nfiles} files read)", file=sys.stderr)
        return 1
    print(f"check_layers: {nfiles} files, every include within the arrows")
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
