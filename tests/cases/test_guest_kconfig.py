"""Kconfig says what works under VMI (docs/GUEST.md, "What X86_VMI rules out"): with X86_VMI=y,
olddefconfig drops each option that cannot work under VMI (X86_16BIT,
X86_IOPL_IOPERM, TRANSPARENT_HUGEPAGE, HIGHPTE, X86_LEGACY_VM86, APM,
PNPBIOS), while without X86_VMI each of them stays; X86_PAE leaves no
32-bit PARAVIRT_XXL.  Run on the configuration of the kernel under test
(paths.GUEST_CONFIG: the default one, or the second one in make
test-configs), in a copy: the build tree is not touched."""

import os
import subprocess

from guest_config import guest_config, read_config
from vmitest import paths, test

# Options X86_VMI rules out, with what turning them on also needs.
FORBIDDEN = {
    "X86_16BIT": ["CONFIG_X86_16BIT=y"],
    "X86_IOPL_IOPERM": ["CONFIG_X86_IOPL_IOPERM=y"],
    "TRANSPARENT_HUGEPAGE": ["CONFIG_TRANSPARENT_HUGEPAGE=y"],
    "HIGHPTE": ["# CONFIG_NOHIGHMEM is not set", "CONFIG_HIGHMEM4G=y", "CONFIG_HIGHPTE=y"],
    "X86_LEGACY_VM86": ["CONFIG_X86_LEGACY_VM86=y"],
    "APM": ["CONFIG_SUSPEND=y", "CONFIG_APM=y"],
    "PNPBIOS": ["CONFIG_ISA=y", "CONFIG_PNP=y", "CONFIG_PNPBIOS=y"],
}


def olddefconfig(t, name, extra):
    """The built configuration plus the lines extra, through olddefconfig
    in a copy (KCONFIG_CONFIG): the resulting options."""
    tree = os.path.dirname(paths.GUEST_CONFIG)
    with open(paths.GUEST_CONFIG) as f:
        base = f.read()
    path = t.tmpfile(name + ".config", (base + "\n".join(extra) + "\n").encode())
    r = subprocess.run(["make", "-s", "-C", tree, "ARCH=i386", f"KCONFIG_CONFIG={path}", "olddefconfig"],
                       capture_output=True, text=True, timeout=300)
    t.check(r.returncode == 0, f"olddefconfig failed: {r.stderr[-500:]}")
    return read_config(path)


@test("guest-kconfig-vmi-forbids", alone="runs make olddefconfig in the guest's kernel tree")
def guest_kconfig_vmi_forbids(t):
    built = guest_config(t)
    t.check(built.get("X86_VMI") == "y", f"{paths.GUEST_CONFIG} does not have CONFIG_X86_VMI=y")
    on = [o for o in FORBIDDEN if built.get(o) == "y"]
    t.check(not on, f"the built kernel has {', '.join(on)} beside X86_VMI")
    # All of them asked for at once (one olddefconfig run, several
    # seconds): each must go, X86_VMI must stay.
    cfg = olddefconfig(t, "forbidden", [line for lines in FORBIDDEN.values() for line in lines])
    t.check(cfg.get("X86_VMI") == "y", f"asking for {', '.join(FORBIDDEN)} dropped X86_VMI")
    kept = [o for o in FORBIDDEN if cfg.get(o) == "y"]
    t.check(not kept, f"olddefconfig kept {', '.join(kept)} with X86_VMI=y")
    # The same without X86_VMI: each stays, so the lines above do ask for
    # it (its other dependencies met) and only X86_VMI rules it out.
    cfg = olddefconfig(t, "forbidden-no-vmi", [line for lines in FORBIDDEN.values() for line in lines]
                       + ["# CONFIG_X86_VMI is not set"])
    t.check("X86_VMI" not in cfg, "X86_VMI stayed on")
    dropped = [o for o in FORBIDDEN if cfg.get(o) != "y"]
    t.check(not dropped, f"without X86_VMI olddefconfig still dropped {', '.join(dropped)}")
    cfg = olddefconfig(t, "X86_PAE", ["CONFIG_X86_PAE=y"])
    t.check(cfg.get("X86_PAE") == "y", "olddefconfig refused X86_PAE itself (expected VMI to give way)")
    t.check("X86_VMI" not in cfg and "PARAVIRT_XXL" not in cfg,
            f"X86_PAE=y left X86_VMI={cfg.get('X86_VMI')} PARAVIRT_XXL={cfg.get('PARAVIRT_XXL')}")
    t.note(f"X86_VMI=y: olddefconfig drops {', '.join(FORBIDDEN)}; X86_PAE=y leaves no VMI, no 32-bit "
           f"PARAVIRT_XXL ({os.path.relpath(paths.GUEST_CONFIG, paths.ROOT)})")
