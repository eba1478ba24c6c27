//! Applying a policy on Linux: namespaces and mounts, capabilities, Landlock, seccomp —
//! in that order, because each step forbids what the earlier ones need.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};

use landlock::{
    ABI, AccessFs, BitFlags, CompatLevel, Compatible, LandlockStatus, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, Scope, make_bitflags,
};
use rustix::mount::{MountFlags, MountPropagationFlags};
use seccompiler::{
    SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule, TargetArch,
};

use crate::policy::{DEVICES, Mode, Policy};
use crate::{Applied, SandboxError};

fn step(what: impl Into<String>) -> impl FnOnce(io::Error) -> SandboxError {
    let what = what.into();
    move |source| SandboxError::Step { step: what, source }
}

fn errno(what: impl Into<String>) -> impl FnOnce(rustix::io::Errno) -> SandboxError {
    let what = what.into();
    move |errno| SandboxError::Step {
        step: what,
        source: errno.into(),
    }
}

pub(crate) fn apply(policy: &Policy) -> Result<Applied, SandboxError> {
    if !policy.sandboxed() {
        // The exec guard alone: no namespaces, mounts, Landlock or sandbox filter.
        if policy.exec_guard {
            crate::guard::install_from_stdin()?;
        }
        return Ok(Applied { landlock_abi: 0 });
    }
    let root = rustix::process::geteuid().is_root();
    enter_namespaces(root)?;
    mount_view(policy)?;
    // Paths resolved before the mounts (the working directory above all) would still see
    // what lies under them: enter it again through the new mounts.
    std::env::set_current_dir(&policy.workdir).map_err(step(format!(
        "cannot enter the working directory {}",
        policy.workdir.display()
    )))?;
    if root {
        drop_capabilities()?;
    }
    let landlock_abi = landlock(policy)?;
    // Before the sandbox's own filter, which refuses `pidfd_getfd` (the guard needs it once
    // to hand its listener over).
    if policy.exec_guard {
        crate::guard::install_from_stdin()?;
    }
    seccomp(policy)?;
    Ok(Applied { landlock_abi })
}

/// A private mount namespace. A user who is not root needs a user namespace for it
/// (mapping only themselves, so they have no power over anything outside); root has the
/// privilege already, keeps its identity and loses its power in [`drop_capabilities`].
/// The network is cut by seccomp ([`seccomp`]), not by a network namespace: that costs
/// half a millisecond per command and adds nothing the socket filter does not do.
fn enter_namespaces(root: bool) -> Result<(), SandboxError> {
    use rustix::thread::UnshareFlags;
    let uid = rustix::process::geteuid().as_raw();
    let gid = rustix::process::getegid().as_raw();
    let (flags, what) = if root {
        (UnshareFlags::NEWNS, "unshare (mount namespace)")
    } else {
        (
            UnshareFlags::NEWUSER | UnshareFlags::NEWNS,
            "unshare (user and mount namespaces)",
        )
    };
    // `unshare_unsafe` is unsafe only because of `FILES` (another thread could lose its
    // descriptors); these flags never include it, and the trampoline is single-threaded.
    #[allow(deprecated)]
    rustix::thread::unshare(flags).map_err(errno(what))?;
    if !root {
        std::fs::write("/proc/self/setgroups", "deny\n").map_err(step("write setgroups"))?;
        std::fs::write("/proc/self/uid_map", format!("{uid} {uid} 1\n")).map_err(step("write uid_map"))?;
        std::fs::write("/proc/self/gid_map", format!("{gid} {gid} 1\n")).map_err(step("write gid_map"))?;
    }
    rustix::mount::mount_change("/", MountPropagationFlags::REC | MountPropagationFlags::PRIVATE)
        .map_err(errno("make the mounts private"))?;
    Ok(())
}

/// True when `path` lies under `root` (or is it).
fn under(path: &Path, root: &Path) -> bool {
    path.starts_with(root)
}

/// The flags a read-only remount must keep: the kernel refuses to drop the ones the
/// mount inherited locked from the host (nosuid, nodev, noexec); atime is kept by default.
/// `None` when the mount is read-only already.
fn kept_flags(path: &Path) -> Result<Option<MountFlags>, rustix::io::Errno> {
    use rustix::fs::StatVfsMountFlags as St;
    let have = rustix::fs::statvfs(path)?.f_flag;
    if have.contains(St::RDONLY) {
        return Ok(None);
    }
    let mut flags = MountFlags::empty();
    for (st, ms) in [
        (St::NOSUID, MountFlags::NOSUID),
        (St::NODEV, MountFlags::NODEV),
        (St::NOEXEC, MountFlags::NOEXEC),
    ] {
        if have.contains(st) {
            flags |= ms;
        }
    }
    Ok(Some(flags))
}

fn remount_read_only(path: &Path) -> Result<(), SandboxError> {
    let fail = errno(format!("make {} read-only", path.display()));
    match kept_flags(path) {
        Ok(Some(kept)) => {
            rustix::mount::mount_remount(path, MountFlags::BIND | MountFlags::RDONLY | kept, "").map_err(fail)
        }
        Ok(None) => Ok(()),
        Err(error) => Err(fail(error)),
    }
}

/// The mount points of this namespace, from `/proc/self/mountinfo`.
fn mount_points() -> Result<Vec<PathBuf>, SandboxError> {
    use std::os::unix::ffi::OsStringExt;
    let text = std::fs::read("/proc/self/mountinfo").map_err(step("read /proc/self/mountinfo"))?;
    let mut points = Vec::new();
    for line in text.split(|&b| b == b'\n') {
        let Some(field) = line.split(|&b| b == b' ').nth(4) else {
            continue;
        };
        // Spaces, tabs, newlines and backslashes are written as \ooo octal escapes.
        let mut path = Vec::with_capacity(field.len());
        let mut i = 0;
        while i < field.len() {
            let octal = field
                .get(i + 1..i + 4)
                .filter(|digits| field[i] == b'\\' && digits.iter().all(|d| (b'0'..=b'7').contains(d)));
            match octal {
                Some(digits) => {
                    path.push(
                        digits
                            .iter()
                            .fold(0u8, |value, d| value.wrapping_mul(8).wrapping_add(d - b'0')),
                    );
                    i += 4;
                }
                None => {
                    path.push(field[i]);
                    i += 1;
                }
            }
        }
        points.push(PathBuf::from(std::ffi::OsString::from_vec(path)));
    }
    Ok(points)
}

/// The command's view of the file system: everything read-only except the writable
/// roots (so neither contents nor modes, owners or times change anywhere else, which
/// Landlock alone would not stop), the read-only paths inside them, the hidden paths,
/// and the pins that keep those in place.
fn mount_view(policy: &Policy) -> Result<(), SandboxError> {
    let exists = |path: &PathBuf| std::fs::metadata(path).is_ok();
    let mut writable: Vec<PathBuf> = if policy.mode == Mode::WorkspaceWrite {
        policy.writable.iter().filter(|path| exists(path)).cloned().collect()
    } else {
        Vec::new()
    };
    writable.sort_by_key(|p| p.components().count());
    let original = mount_points()?;
    // Writable roots become mounts of their own, which the read-only remounts below
    // leave alone; they start as copies of what they are in (writable, normally).
    for root in &writable {
        rustix::mount::mount_bind_recursive(root, root).map_err(errno(format!("bind {}", root.display())))?;
    }
    for point in original.iter().rev() {
        if writable.iter().any(|root| under(point, root)) {
            continue;
        }
        // Unreadable (hidden under another mount, out of this user's reach) or read-only
        // already: nothing to do, the command cannot write there either.
        if let Ok(Some(kept)) = kept_flags(point) {
            let flags = MountFlags::BIND | MountFlags::RDONLY | kept;
            match rustix::mount::mount_remount(point, flags, "") {
                Ok(()) | Err(rustix::io::Errno::ACCESS | rustix::io::Errno::NOENT | rustix::io::Errno::NOTDIR) => {}
                Err(error) => return Err(errno(format!("make {} read-only", point.display()))(error)),
            }
        }
    }
    // A path inside a hidden directory is hidden already.
    let masked: Vec<&PathBuf> = policy
        .masked
        .iter()
        .filter(|path| exists(path))
        .filter(|path| {
            !policy
                .masked
                .iter()
                .any(|other| other != *path && under(path, other) && is_dir(other))
        })
        .collect();
    // Read-only only matters where writing is possible, and once per tree.
    let read_only: Vec<&PathBuf> = policy
        .read_only
        .iter()
        .filter(|path| exists(path) && writable.iter().any(|root| under(path, root)))
        .filter(|path| {
            !policy
                .read_only
                .iter()
                .any(|other| other != *path && under(path, other) && exists(other))
        })
        .collect();
    // Pins: every directory between the outermost writable root and a protected path
    // becomes a mount point of its own, which cannot be renamed or removed, so the path
    // stays where the rules named it. Not inside a read-only tree (nothing moves there,
    // and a pin would be a writable mount inside it).
    let mut pins = BTreeSet::new();
    for path in read_only.iter().chain(&masked) {
        let Some(root) = writable.iter().find(|root| under(path, root)) else {
            continue;
        };
        for ancestor in path.ancestors().skip(1) {
            if ancestor == root.as_path() || !under(ancestor, root) {
                break;
            }
            if !read_only.iter().any(|ro| under(ancestor, ro)) {
                pins.insert(ancestor.to_path_buf());
            }
        }
    }
    let by_depth = |paths: &mut Vec<PathBuf>| paths.sort_by_key(|p| p.components().count());
    let mut pins: Vec<PathBuf> = pins.into_iter().collect();
    by_depth(&mut pins);
    for pin in &pins {
        rustix::mount::mount_bind_recursive(pin, pin).map_err(errno(format!("pin {}", pin.display())))?;
    }
    let mut read_only: Vec<PathBuf> = read_only.into_iter().cloned().collect();
    by_depth(&mut read_only);
    for path in &read_only {
        rustix::mount::mount_bind_recursive(path, path).map_err(errno(format!("bind {} read-only", path.display())))?;
        remount_read_only(path)?;
    }
    let mut masked: Vec<PathBuf> = masked.into_iter().cloned().collect();
    by_depth(&mut masked);
    for path in &masked {
        if is_dir(path) {
            // An empty directory that no one may enter, on a read-only tmpfs.
            let flags = MountFlags::RDONLY | MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC;
            rustix::mount::mount("tmpfs", path, "tmpfs", flags, c"mode=000,size=4k,nr_inodes=1")
                .map_err(errno(format!("hide {}", path.display())))?;
        } else {
            let mask = policy.mask_file.as_deref().ok_or_else(|| SandboxError::Step {
                step: format!("hide {}", path.display()),
                source: io::Error::other("no mask file to mount over it"),
            })?;
            let meta = std::fs::symlink_metadata(mask).map_err(step(format!("the mask file {}", mask.display())))?;
            if !std::os::unix::fs::FileTypeExt::is_socket(&meta.file_type()) {
                return Err(SandboxError::Step {
                    step: format!("the mask file {}", mask.display()),
                    source: io::Error::other("not a Unix socket"),
                });
            }
            rustix::mount::mount_bind(mask, path).map_err(errno(format!("hide {}", path.display())))?;
            remount_read_only(path)?;
        }
    }
    hide_raw_devices()
}

/// Character devices that are raw memory or I/O ports.
const RAW_MEMORY: &[&str] = &["/dev/mem", "/dev/kmem", "/dev/port"];

/// Raw block devices and memory are out of reach: `/dev/null` is bound over each, so a
/// command (root in particular) cannot read the disk under the hidden files, or write it,
/// around the sandbox. Reads give end of file, writes vanish.
fn hide_raw_devices() -> Result<(), SandboxError> {
    use std::os::unix::fs::FileTypeExt;
    let mut devices: Vec<PathBuf> = RAW_MEMORY.iter().map(PathBuf::from).collect();
    for dir in ["/dev", "/dev/mapper"] {
        let Ok(entries) = std::fs::read_dir(dir) else { continue };
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|kind| kind.is_block_device()) {
                devices.push(entry.path());
            }
        }
    }
    for device in devices {
        let Ok(meta) = std::fs::symlink_metadata(&device) else {
            continue;
        };
        let kind = meta.file_type();
        if !kind.is_block_device() && !kind.is_char_device() {
            continue;
        }
        rustix::mount::mount_bind("/dev/null", &device).map_err(errno(format!("hide {}", device.display())))?;
    }
    Ok(())
}

fn is_dir(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|meta| meta.is_dir())
}

/// What root keeps inside the sandbox: what a container's root has, so ordinary work
/// (files of other owners in the project, `chown` in a build) goes on. Everything else
/// (mounting, tracing, modules, raw I/O, the network's administration…) is gone.
fn kept_capabilities() -> rustix::thread::CapabilitySet {
    use rustix::thread::CapabilitySet as C;
    C::CHOWN
        | C::DAC_OVERRIDE
        | C::DAC_READ_SEARCH
        | C::FOWNER
        | C::FSETID
        | C::KILL
        | C::SETGID
        | C::SETUID
        | C::NET_BIND_SERVICE
        | C::AUDIT_WRITE
}

fn drop_capabilities() -> Result<(), SandboxError> {
    use rustix::thread::CapabilitySet;
    let keep = kept_capabilities();
    let last: u32 = std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
        .ok()
        .and_then(|text| text.trim().parse().ok())
        .unwrap_or(40)
        .min(63);
    for bit in 0..=last {
        let capability = CapabilitySet::from_bits_retain(1 << bit);
        if !keep.contains(capability) {
            rustix::thread::remove_capability_from_bounding_set(capability)
                .map_err(errno("drop capabilities from the bounding set"))?;
        }
    }
    rustix::thread::clear_ambient_capability_set().map_err(errno("clear the ambient capabilities"))?;
    let mut sets = rustix::thread::capabilities(None).map_err(errno("read capabilities"))?;
    sets.effective &= keep;
    sets.permitted &= keep;
    sets.inheritable = CapabilitySet::empty();
    rustix::thread::set_capabilities(None, sets).map_err(errno("drop capabilities"))?;
    Ok(())
}

/// The newest Landlock ABI whose rights this code has been tested with.
const ABI_TESTED: ABI = ABI::V6;

fn landlock(policy: &Policy) -> Result<u32, SandboxError> {
    let error = |e: landlock::RulesetError| SandboxError::Landlock(e.to_string());
    // Every right that changes the file system. Device ioctls stay allowed (terminals),
    // and connecting to Unix sockets too.
    let write: BitFlags<AccessFs> = AccessFs::from_write(ABI_TESTED) & !make_bitflags!(AccessFs::{IoctlDev});
    let file_write = write & AccessFs::from_file(ABI_TESTED);
    let mut scopes: BitFlags<Scope> = Scope::Signal.into();
    if !policy.network {
        scopes |= Scope::AbstractUnixSocket;
    }
    let ruleset = Ruleset::default()
        // The write rights of the first ABI are the sandbox; later ones add precision.
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_write(ABI::V1))
        .map_err(error)?
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(write)
        .map_err(error)?
        .scope(scopes)
        .map_err(error)?;
    let mut created = ruleset.create().map_err(error)?;
    if policy.mode == Mode::WorkspaceWrite {
        for root in &policy.writable {
            let Ok(meta) = std::fs::metadata(root) else {
                continue;
            };
            let access = if meta.is_dir() { write } else { file_write };
            let fd = PathFd::new(root).map_err(|e| SandboxError::Landlock(e.to_string()))?;
            created = created.add_rule(PathBeneath::new(fd, access)).map_err(error)?;
        }
    }
    let device = make_bitflags!(AccessFs::{WriteFile | Truncate}) & file_write;
    for device_path in DEVICES {
        if std::fs::metadata(device_path).is_err() {
            continue;
        }
        let fd = PathFd::new(device_path).map_err(|e| SandboxError::Landlock(e.to_string()))?;
        created = created.add_rule(PathBeneath::new(fd, device)).map_err(error)?;
    }
    let status = created.restrict_self().map_err(error)?;
    let abi = match status.landlock {
        LandlockStatus::Available {
            kernel_abi,
            effective_abi,
        } => kernel_abi.map_or(effective_abi as i32 as u32, |abi| abi as u32),
        LandlockStatus::NotEnabled => return Err(SandboxError::Landlock("not enabled in this kernel".into())),
        LandlockStatus::NotImplemented => return Err(SandboxError::Landlock("not built into this kernel".into())),
    };
    if status.ruleset == RulesetStatus::NotEnforced {
        return Err(SandboxError::Landlock("the ruleset is not enforced".into()));
    }
    Ok(abi)
}

/// System calls no sandboxed command needs and that reach past Landlock: other
/// namespaces, mounts, tracing other processes, the kernel keyring, BPF, io_uring (its
/// operations skip seccomp), kernel modules and the like.
fn denied_syscalls() -> Vec<i64> {
    let mut calls = vec![
        libc::SYS_unshare,
        libc::SYS_setns,
        libc::SYS_mount,
        libc::SYS_umount2,
        libc::SYS_pivot_root,
        libc::SYS_chroot,
        libc::SYS_move_mount,
        libc::SYS_open_tree,
        libc::SYS_fsopen,
        libc::SYS_fsconfig,
        libc::SYS_fsmount,
        libc::SYS_fspick,
        libc::SYS_mount_setattr,
        libc::SYS_ptrace,
        libc::SYS_process_vm_readv,
        libc::SYS_process_vm_writev,
        libc::SYS_pidfd_getfd,
        libc::SYS_add_key,
        libc::SYS_keyctl,
        libc::SYS_request_key,
        libc::SYS_bpf,
        libc::SYS_perf_event_open,
        libc::SYS_userfaultfd,
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
        libc::SYS_init_module,
        libc::SYS_finit_module,
        libc::SYS_delete_module,
        libc::SYS_kexec_load,
        libc::SYS_kexec_file_load,
        libc::SYS_reboot,
        libc::SYS_swapon,
        libc::SYS_swapoff,
        libc::SYS_acct,
        libc::SYS_open_by_handle_at,
    ];
    #[cfg(target_arch = "x86_64")]
    calls.extend([libc::SYS_iopl, libc::SYS_ioperm]);
    calls
}

fn condition(arg: u8, len: SeccompCmpArgLen, op: SeccompCmpOp, value: u64) -> Result<SeccompRule, SandboxError> {
    let condition = SeccompCondition::new(arg, len, op, value).map_err(|e| SandboxError::Seccomp(e.to_string()))?;
    SeccompRule::new(vec![condition]).map_err(|e| SandboxError::Seccomp(e.to_string()))
}

fn seccomp(policy: &Policy) -> Result<(), SandboxError> {
    let fail = |e: seccompiler::BackendError| SandboxError::Seccomp(e.to_string());
    let arch = TargetArch::try_from(std::env::consts::ARCH)
        .map_err(|_| SandboxError::Seccomp(format!("no filter for {}", std::env::consts::ARCH)))?;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = denied_syscalls().into_iter().map(|nr| (nr, Vec::new())).collect();
    // clone with any namespace flag (threads and plain forks stay allowed).
    let namespaces = [
        libc::CLONE_NEWUSER,
        libc::CLONE_NEWNS,
        libc::CLONE_NEWNET,
        libc::CLONE_NEWPID,
        libc::CLONE_NEWUTS,
        libc::CLONE_NEWIPC,
        libc::CLONE_NEWCGROUP,
    ];
    let mut clone = Vec::new();
    for flag in namespaces {
        let flag = flag as u32 as u64;
        clone.push(condition(
            0,
            SeccompCmpArgLen::Qword,
            SeccompCmpOp::MaskedEq(flag),
            flag,
        )?);
    }
    rules.insert(libc::SYS_clone, clone);
    // Typing into the terminal that started toolgate.
    let mut ioctl = Vec::new();
    // The request's type differs between C libraries (c_ulong, c_int).
    #[allow(clippy::unnecessary_cast)]
    for request in [libc::TIOCSTI as u64, libc::TIOCLINUX as u64] {
        ioctl.push(condition(1, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, request)?);
    }
    rules.insert(libc::SYS_ioctl, ioctl);
    if !policy.network {
        // No network: Unix sockets only. Not TCP or UDP (IPv4, IPv6, loopback included),
        // nor raw packets, netlink, VM sockets to the host or any other family.
        let unix = condition(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, libc::AF_UNIX as u64)?;
        rules.insert(libc::SYS_socket, vec![unix]);
    }
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(fail)?;
    let mut program: seccompiler::BpfProgram = filter.try_into().map_err(fail)?;
    if cfg!(target_arch = "x86_64") {
        // The x32 ABI numbers every call with bit 30 set: a filter keyed on x86_64
        // numbers would let them all through. Refuse them right after the arch check.
        let x32 = [
            bpf(BPF_LD | BPF_W | BPF_ABS, 0, 0, 0),
            bpf(BPF_JMP | BPF_JGE | BPF_K, 0, 1, 0x4000_0000),
            bpf(BPF_RET | BPF_K, 0, 0, SECCOMP_RET_ERRNO | libc::EPERM as u32),
        ];
        if program.len() < 3 {
            return Err(SandboxError::Seccomp("unexpected filter layout".into()));
        }
        program.splice(3..3, x32);
    }
    seccompiler::apply_filter(&program).map_err(|e| SandboxError::Seccomp(e.to_string()))?;
    // clone3 passes its flags in memory a filter cannot read: make it look absent, so
    // the C library falls back to clone, whose flags the filter above sees.
    let mut clone3 = BTreeMap::new();
    clone3.insert(libc::SYS_clone3, Vec::new());
    let filter = SeccompFilter::new(
        clone3,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        arch,
    )
    .map_err(fail)?;
    let program: seccompiler::BpfProgram = filter.try_into().map_err(fail)?;
    seccompiler::apply_filter(&program).map_err(|e| SandboxError::Seccomp(e.to_string()))?;
    Ok(())
}

const BPF_LD: u16 = 0x00;
const BPF_W: u16 = 0x00;
const BPF_ABS: u16 = 0x20;
const BPF_JMP: u16 = 0x05;
const BPF_JGE: u16 = 0x30;
const BPF_K: u16 = 0x00;
const BPF_RET: u16 = 0x06;
const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;

fn bpf(code: u16, jt: u8, jf: u8, k: u32) -> seccompiler::sock_filter {
    seccompiler::sock_filter { code, jt, jf, k }
}
