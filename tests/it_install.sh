# it_install.sh - an application of telem built against an installed tree.
#
# `cmake --install` into a private prefix must give exactly the public
# headers, libtelem.so and libtelem.a (the metrics API, the analysis client
# and the dictionary client in one library) and a relocatable telem.pc.
# Then, as docs/api.md says:
#   - each public header compiles alone with only pkg-config's flags, and
#     together they declare none of the codec's types; libtelem.so does
#     not need czmq;
#   - every program of examples/ builds with
#       cc app.c $(pkg-config --cflags --libs telem)
#     (plus GSL where the example uses it), and the metrics example also
#     statically against libtelem.a;
#   - the add_data_demo built that way records into a real telemd, and
#     telem_client reads the samples back.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
: "${TELEM_SRC:?TELEM_SRC must name the source tree}"
command -v pkg-config >/dev/null || fail "pkg-config is missing (examples/setup.sh installs it)"

install_tree

# ---- what is installed ------------------------------------------------------
[ -f "$lib/pkgconfig/telem.pc" ] || fail "no telem.pc under $lib/pkgconfig"
for f in libtelem.so libtelem.a; do
    [ -e "$lib/$f" ] || fail "$f is not installed"
done
# Only libtelem: the parts' own archives are the build's business.
others=$(cd "$lib" && ls libtelem_*.a libtelemd*.a 2>/dev/null || true)
[ -z "$others" ] || fail "internal archives installed: $others"
headers=$(cd "$P/include/telem" && ls | sort | tr '\n' ' ')
want=$(sed -n 's/^public: *//p' "$TELEM_SRC/docs/architecture.arrows" | tr ' ' '\n' \
       | sed '/^$/d' | sort | tr '\n' ' ')
[ "$headers" = "$want" ] \
    || fail "installed headers '$headers', docs/architecture.arrows lists '$want'"

pc() { pkg-config "$@" telem 2>"$T/pc.log" || fail "pkg-config $*: $(cat "$T/pc.log")"; }
[ "$(pc --modversion)" = "$(build_cache CMAKE_PROJECT_VERSION)" ] \
    || fail "telem.pc version $(pc --modversion)"
# telem.pc finds its prefix from where it lies (the tree may be moved).
inc=$(pc --cflags-only-I | sed 's/^-I//; s/ *$//')
[ "$(realpath "$inc")" = "$(realpath "$P/include")" ] \
    || fail "pkg-config --cflags names $inc, not the installed $P/include"

# ccx OUT SRC ARGS...: compiles as an application would (the compiler's
# default C dialect, as `cc app.c ...` in docs/api.md), warnings as errors.
ccx() {
    local out=$1 src=$2; shift 2
    # shellcheck disable=SC2046
    "$cc" -Wall -Wextra -Werror "${san[@]}" -o "$out" "$src" "$@" \
        2>"$T/cc.log" || fail "$(basename "$src") does not build: $(cat "$T/cc.log")"
}

# ---- each public header alone ----------------------------------------------
for h in $want; do
    printf '#include <telem/%s>\nint main(void) { return 0; }\n' "$h" >"$T/h.c"
    # shellcheck disable=SC2046
    ccx "$T/h" "$T/h.c" $(pc --cflags)
done

# An application that includes the client headers gets no wire type: the
# codec's names stay undeclared (the compiler must refuse this program).
printf '#include <telem/ac.h>\n#include <telem/ddict.h>\n#include <telem/telem.h>\nint main(void) { telem_proto_encoder_t *e = 0; (void) e; return TELEM_MSG_BATCH; }\n' >"$T/wire.c"
# shellcheck disable=SC2046
if "$cc" -o "$T/wire" "$T/wire.c" $(pc --cflags) 2>"$T/wire.log"; then
    fail "a program including ac.h, ddict.h and telem.h sees the codec's types"
fi
grep -q "telem_proto_encoder_t" "$T/wire.log" || fail "wire.c failed for another reason: $(cat "$T/wire.log")"
# The client libraries never touch czmq (no signal handlers in the host).
if ldd "$lib/libtelem.so" | grep -q libczmq; then
    fail "libtelem.so needs libczmq: $(ldd "$lib/libtelem.so" | grep czmq)"
fi

# ---- the examples, through pkg-config ---------------------------------------
gsl=$(pkg-config --cflags --libs gsl)
mkdir "$T/ex"
for src in "$TELEM_SRC"/examples/*.c; do
    name=$(basename "$src" .c)
    [ "$name" = slow_gpu_law ] && continue          # part of slow_gpu
    extra=()
    [ "$name" = slow_gpu ] && extra=("$TELEM_SRC/examples/slow_gpu_law.c")
    # shellcheck disable=SC2046,SC2086
    ccx "$T/ex/$name" "$src" "${extra[@]}" $(pc --cflags --libs) $gsl -lm \
        -Wl,-rpath,"$lib"
    "$T/ex/$name" --help >"$T/ex/$name.help" 2>&1 \
        || fail "$name --help, built against the installed tree: $(cat "$T/ex/$name.help")"
done
# Statically, as docs/api.md says: libtelem.a, then the libraries
# `pkg-config --static --libs telem` names after -ltelem.
static_libs=$(pc --static --libs-only-l | sed 's/^-ltelem //')
# shellcheck disable=SC2046,SC2086
ccx "$T/ex/add_data_demo_static" "$TELEM_SRC/examples/add_data_demo.c" \
    $(pc --cflags) "$lib/libtelem.a" $static_libs
if ldd "$T/ex/add_data_demo_static" | grep -q 'libtelem\.so'; then
    fail "the static build needs libtelem.so"
fi

# ---- the installed-tree build records into a real telemd ---------------------
start_node n1 --level 1 --bind none
for prog in add_data_demo add_data_demo_static; do
    TELEM_NODE=n1 "$T/ex/$prog" --count 5 --interval-ms 2 --metric "m_$prog" \
        >"$T/$prog.log" 2>&1 || fail "$prog: $(cat "$T/$prog.log")"
done
"$TELEM_BIN/telem_client" -f json -v >"$T/values.json" 2>"$T/client.log" \
    || fail "telem_client -v: $(cat "$T/client.log")"
python3 - "$T/values.json" <<'PY' || fail "the installed-tree programs' samples are not in telemd: $(cat "$T/values.json")"
import json, sys
doc = json.load(open(sys.argv[1]))
rows = doc["series"]
names = {r["metric"] for r in rows}
# add_data_demo records NAME with the step number; 5 steps: the last is 4.
for prog in ("add_data_demo", "add_data_demo_static"):
    got = [r for r in rows if r["metric"] == f"m_{prog}"]
    assert got and got[0]["points"][-1][1] == 4.0, (prog, got, sorted(names))
PY

# ---- the Python package, from the installed prefix ----------------------------
# Installed under PREFIX/lib/python3.X/dist-packages (docs/python.md), it
# imports with that on PYTHONPATH, loads the installed libtelem (its RPATH,
# not the build's) and records into the running telemd.
pydir=$P/$(build_cache TELEM_PYTHON_DIR)
if [ -z "$(build_cache TELEM_PYTHON_DIR)" ]; then
    echo "it_install: no Python package in this build (python3-dev missing)"
elif [ ! -d "$pydir/telem" ]; then
    fail "the telem Python package is not installed under $pydir"
else
    pyenv=(PYTHONPATH="$pydir" TELEM_NODE=n1 LD_LIBRARY_PATH=)
    if [ "$(build_cache TELEM_SANITIZE)" = ON ]; then
        pyenv+=(LD_PRELOAD="$("$cc" -print-file-name=libasan.so):$("$cc" -print-file-name=libubsan.so)"
                ASAN_OPTIONS=detect_leaks=0)
    fi
    env "${pyenv[@]}" /usr/bin/python3 - "$P" >"$T/py.log" 2>&1 <<'PY' \
        || fail "import telem from the installed prefix: $(cat "$T/py.log")"
import os, sys
import telem
prefix = os.path.realpath(sys.argv[1])
assert os.path.realpath(telem.__file__).startswith(prefix), telem.__file__
assert telem.libtelem_path().startswith(prefix), telem.libtelem_path()
assert telem.add_data("m_python_installed", 4.0) is True
with telem.section("installed"):
    pass
assert telem.finalize() is True, telem.stats()
PY
    "$TELEM_BIN/telem_client" -f json query m_python_installed,telem_section_step \
        >"$T/py.json" 2>"$T/client.log" || fail "telem_client query: $(cat "$T/client.log")"
    python3 - "$T/py.json" <<'PY' || fail "the installed package's samples are not in telemd: $(cat "$T/py.json")"
import json, sys
rows = json.load(open(sys.argv[1]))["series"]
got = {r["metric"]: r for r in rows}
assert got["m_python_installed"]["points"][-1][1] == 4.0, rows
assert got["telem_section_step"]["tags"]["section"] == "installed", rows
PY
    # pip against the installed libtelem (pkg-config telem), offline, from
    # a copy of python/ (pip builds in the tree it is given).
    if /usr/bin/python3 -c 'import setuptools' 2>/dev/null \
        && /usr/bin/python3 -m pip --version >/dev/null 2>&1; then
        mkdir -p "$T/pysrc"
        cp -r "$TELEM_SRC/python/telem" "$TELEM_SRC/python/setup.py" \
            "$TELEM_SRC/python/pyproject.toml" "$TELEM_SRC/python/README.md" "$T/pysrc/"
        pip_install() {
            (cd "$T/pysrc" && env "$@" /usr/bin/python3 -m pip install -q \
                --no-build-isolation --no-deps --no-index --target "$T/pip" .)
        }
        # No libtelem to be found: pip fails with what to do.
        if pip_install PKG_CONFIG_PATH="$T/none" PKG_CONFIG_LIBDIR="$T/none" >"$T/pip-bad.log" 2>&1; then
            fail "pip built telem without a libtelem"
        fi
        grep -q "pkg-config cannot find libtelem" "$T/pip-bad.log" \
            || fail "pip without libtelem: no clear error: $(tail -n 5 "$T/pip-bad.log")"
        pip_install PKG_CONFIG_PATH="$P/lib/pkgconfig" >"$T/pip.log" 2>&1 \
            || fail "pip install ./python: $(tail -n 20 "$T/pip.log")"
        pipenv=("${pyenv[@]}")
        pipenv[0]=PYTHONPATH="$T/pip"
        (cd / && env "${pipenv[@]}" /usr/bin/python3 - "$P" "$T/pip") >"$T/pip-py.log" 2>&1 <<'PY' \
            || fail "import telem installed by pip: $(cat "$T/pip-py.log")"
import os, sys
import telem
assert os.path.realpath(telem.__file__).startswith(os.path.realpath(sys.argv[2])), telem.__file__
assert telem.libtelem_path().startswith(os.path.realpath(sys.argv[1])), telem.libtelem_path()
assert telem.add_data("m_python_pip", 5.0) is True
assert telem.finalize() is True, telem.stats()
PY
        "$TELEM_BIN/telem_client" -f json query m_python_pip >"$T/pip.json" 2>"$T/client.log" \
            || fail "telem_client query: $(cat "$T/client.log")"
        grep -q '"m_python_pip"' "$T/pip.json" || fail "the pip-installed package's sample is not in telemd"
    else
        echo "it_install: pip install ./python not checked: python3-pip or python3-setuptools missing"
    fi
fi
echo "it_install: ok"
