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

/// What the sandbox's filter does with one system call (everything not listed runs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Rule {
    /// Fails with this errno.
    Fail(u32),
    /// `clone` with any of these flags (namespaces) fails with `EPERM`; threads and
    /// plain forks run.
    CloneFlags(u32),
    /// `ioctl` with one of these requests fails with `EPERM`.
    IoctlRequests([u32; 2]),
    /// `socket` of any family but this one fails with `EPERM`.
    OnlyFamily(u32),
}

/// Every system call the sandbox's filter decides, by number.
fn rules(policy: &Policy) -> BTreeMap<u32, Rule> {
    let eperm = libc::EPERM as u32;
    let mut rules: BTreeMap<u32, Rule> = denied_syscalls()
        .into_iter()
        .map(|nr| (nr as u32, Rule::Fail(eperm)))
        .collect();
    // clone with any namespace flag (threads and plain forks stay allowed).
    let namespaces = libc::CLONE_NEWUSER
        | libc::CLONE_NEWNS
        | libc::CLONE_NEWNET
        | libc::CLONE_NEWPID
        | libc::CLONE_NEWUTS
        | libc::CLONE_NEWIPC
        | libc::CLONE_NEWCGROUP;
    rules.insert(libc::SYS_clone as u32, Rule::CloneFlags(namespaces as u32));
    // Typing into the terminal that started toolgate. The request's type differs between
    // C libraries (c_ulong, c_int); the kernel takes it as 32 bits.
    #[allow(clippy::unnecessary_cast)]
    let requests = [libc::TIOCSTI as u32, libc::TIOCLINUX as u32];
    rules.insert(libc::SYS_ioctl as u32, Rule::IoctlRequests(requests));
    if !policy.network {
        // No network: Unix sockets only. Not TCP or UDP (IPv4, IPv6, loopback included),
        // nor raw packets, netlink, VM sockets to the host or any other family.
        rules.insert(libc::SYS_socket as u32, Rule::OnlyFamily(libc::AF_UNIX as u32));
    }
    // clone3 passes its flags in memory a filter cannot read: make it look absent, so
    // the C library falls back to clone, whose flags the filter sees.
    rules.insert(libc::SYS_clone3 as u32, Rule::Fail(libc::ENOSYS as u32));
    rules
}

/// The `AUDIT_ARCH_*` value of the architecture this was built for.
fn audit_arch() -> Result<u32, SandboxError> {
    match std::env::consts::ARCH {
        "x86_64" => Ok(0xC000_003E),
        "aarch64" => Ok(0xC000_00B7),
        "riscv64" => Ok(0xC000_00F3),
        other => Err(SandboxError::Seccomp(format!("no filter for {other}"))),
    }
}

/// Where `seccomp_data` keeps the system call's number, its architecture, and the low 32
/// bits of argument `n` (little-endian: the low half comes first).
const DATA_NR: u32 = 0;
const DATA_ARCH: u32 = 4;
fn data_arg_low(n: u32) -> u32 {
    16 + 8 * n
}

const RET_ALLOW: u32 = 0x7fff_0000;
const RET_KILL_PROCESS: u32 = 0x8000_0000;

/// The sandbox's filter as one BPF program: the architecture check (another one's calls
/// end the process), x32 numbers refused, then a binary search over the numbers of
/// [`rules`] (everything else runs). The kernel runs a filter on every system call that
/// its per-filter cache cannot answer and, when the filter is installed, emulates it once
/// for every system call number to fill that cache: a search of a few comparisons instead
/// of a chain of one per listed call (seccompiler's layout, and a second filter for
/// `clone3`) takes a quarter of a millisecond off every sandboxed command.
fn filter_program(policy: &Policy) -> Result<Vec<seccompiler::sock_filter>, SandboxError> {
    let eperm = SECCOMP_RET_ERRNO | libc::EPERM as u32;
    let mut program = vec![
        bpf(BPF_LD | BPF_W | BPF_ABS, 0, 0, DATA_ARCH),
        bpf(BPF_JMP | BPF_JEQ | BPF_K, 1, 0, audit_arch()?),
        bpf(BPF_RET | BPF_K, 0, 0, RET_KILL_PROCESS),
        bpf(BPF_LD | BPF_W | BPF_ABS, 0, 0, DATA_NR),
    ];
    if cfg!(target_arch = "x86_64") {
        // The x32 ABI numbers every call with bit 30 set: a filter keyed on x86_64
        // numbers would let them all through.
        program.extend([
            bpf(BPF_JMP | BPF_JGE | BPF_K, 0, 1, 0x4000_0000),
            bpf(BPF_RET | BPF_K, 0, 0, eperm),
        ]);
    }
    let rules: Vec<(u32, Rule)> = rules(policy).into_iter().collect();
    program.extend(search(&rules)?);
    Ok(program)
}

/// The instructions that decide one listed call (the number is already matched); every
/// path ends in a return.
fn decide(rule: Rule) -> Vec<seccompiler::sock_filter> {
    let eperm = SECCOMP_RET_ERRNO | libc::EPERM as u32;
    match rule {
        Rule::Fail(errno) => vec![bpf(BPF_RET | BPF_K, 0, 0, SECCOMP_RET_ERRNO | errno)],
        Rule::CloneFlags(flags) => vec![
            bpf(BPF_LD | BPF_W | BPF_ABS, 0, 0, data_arg_low(0)),
            bpf(BPF_JMP | BPF_JSET | BPF_K, 0, 1, flags),
            bpf(BPF_RET | BPF_K, 0, 0, eperm),
            bpf(BPF_RET | BPF_K, 0, 0, RET_ALLOW),
        ],
        Rule::IoctlRequests([first, second]) => vec![
            bpf(BPF_LD | BPF_W | BPF_ABS, 0, 0, data_arg_low(1)),
            bpf(BPF_JMP | BPF_JEQ | BPF_K, 2, 0, first),
            bpf(BPF_JMP | BPF_JEQ | BPF_K, 1, 0, second),
            bpf(BPF_RET | BPF_K, 0, 0, RET_ALLOW),
            bpf(BPF_RET | BPF_K, 0, 0, eperm),
        ],
        Rule::OnlyFamily(family) => vec![
            bpf(BPF_LD | BPF_W | BPF_ABS, 0, 0, data_arg_low(0)),
            bpf(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, family),
            bpf(BPF_RET | BPF_K, 0, 0, RET_ALLOW),
            bpf(BPF_RET | BPF_K, 0, 0, eperm),
        ],
    }
}

fn jump(distance: usize) -> Result<u8, SandboxError> {
    u8::try_from(distance).map_err(|_| SandboxError::Seccomp("filter jump out of range".into()))
}

/// The binary search over `rules` (sorted by number) with the number in the accumulator:
/// a few entries end in a chain of equality tests, then "allow", then their decisions.
fn search(rules: &[(u32, Rule)]) -> Result<Vec<seccompiler::sock_filter>, SandboxError> {
    if rules.len() <= 3 {
        let blocks: Vec<Vec<seccompiler::sock_filter>> = rules.iter().map(|(_, rule)| decide(*rule)).collect();
        let mut out = Vec::new();
        let mut before = 0;
        for (i, (nr, _)) in rules.iter().enumerate() {
            // From the next instruction: the rest of the chain, the "allow", earlier blocks.
            let distance = (rules.len() - i - 1) + 1 + before;
            out.push(bpf(BPF_JMP | BPF_JEQ | BPF_K, jump(distance)?, 0, *nr));
            before += blocks[i].len();
        }
        out.push(bpf(BPF_RET | BPF_K, 0, 0, RET_ALLOW));
        out.extend(blocks.into_iter().flatten());
        return Ok(out);
    }
    let mid = rules.len() / 2;
    let below = search(&rules[..mid])?;
    let above = search(&rules[mid..])?;
    let mut out = vec![bpf(BPF_JMP | BPF_JGE | BPF_K, jump(below.len())?, 0, rules[mid].0)];
    out.extend(below);
    out.extend(above);
    Ok(out)
}

fn seccomp(policy: &Policy) -> Result<(), SandboxError> {
    let program = filter_program(policy)?;
    seccompiler::apply_filter(&program).map_err(|e| SandboxError::Seccomp(e.to_string()))
}

const BPF_LD: u16 = 0x00;
const BPF_W: u16 = 0x00;
const BPF_ABS: u16 = 0x20;
const BPF_JMP: u16 = 0x05;
const BPF_JEQ: u16 = 0x10;
const BPF_JGE: u16 = 0x30;
const BPF_JSET: u16 = 0x40;
const BPF_K: u16 = 0x00;
const BPF_RET: u16 = 0x06;
const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;

fn bpf(code: u16, jt: u8, jf: u8, k: u32) -> seccompiler::sock_filter {
    seccompiler::sock_filter { code, jt, jf, k }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs a classic BPF seccomp program (the instructions the filter uses) on one call.
    fn run(program: &[seccompiler::sock_filter], arch: u32, nr: u32, args: [u64; 6]) -> u32 {
        let word = |offset: u32| -> u32 {
            match offset {
                DATA_NR => nr,
                DATA_ARCH => arch,
                offset if (16..64).contains(&offset) && offset % 4 == 0 => {
                    let arg = args[((offset - 16) / 8) as usize];
                    if (offset - 16) % 8 == 0 {
                        arg as u32
                    } else {
                        (arg >> 32) as u32
                    }
                }
                other => panic!("load of offset {other}"),
            }
        };
        let (mut pc, mut a) = (0usize, 0u32);
        loop {
            let insn = &program[pc];
            pc += 1;
            match insn.code {
                c if c == BPF_LD | BPF_W | BPF_ABS => a = word(insn.k),
                c if c == BPF_RET | BPF_K => return insn.k,
                c => {
                    let taken = match c {
                        c if c == BPF_JMP | BPF_JEQ | BPF_K => a == insn.k,
                        c if c == BPF_JMP | BPF_JGE | BPF_K => a >= insn.k,
                        c if c == BPF_JMP | BPF_JSET | BPF_K => a & insn.k != 0,
                        other => panic!("instruction {other:#x}"),
                    };
                    pc += usize::from(if taken { insn.jt } else { insn.jf });
                }
            }
        }
    }

    #[test]
    fn the_filter_refuses_exactly_what_the_rules_list() {
        let arch = audit_arch().unwrap_or_else(|e| panic!("{e}"));
        let eperm = SECCOMP_RET_ERRNO | libc::EPERM as u32;
        for network in [false, true] {
            let policy = Policy::new(Mode::WorkspaceWrite, "/tmp", network);
            let program = filter_program(&policy).unwrap_or_else(|e| panic!("{e}"));
            let rules = rules(&policy);
            // Every number, listed or not, with arguments that pass and that fail.
            for nr in 0..1024u32 {
                let plain = run(&program, arch, nr, [0; 6]);
                let expected = match rules.get(&nr) {
                    Some(Rule::Fail(errno)) => SECCOMP_RET_ERRNO | errno,
                    Some(Rule::OnlyFamily(_)) => eperm,
                    _ => RET_ALLOW,
                };
                assert_eq!(plain, expected, "call {nr} with no arguments");
            }
            let clone = libc::SYS_clone as u32;
            assert_eq!(
                run(&program, arch, clone, [libc::SIGCHLD as u64, 0, 0, 0, 0, 0]),
                RET_ALLOW
            );
            let thread = (libc::CLONE_VM | libc::CLONE_THREAD | libc::CLONE_SIGHAND) as u64;
            assert_eq!(run(&program, arch, clone, [thread, 0, 0, 0, 0, 0]), RET_ALLOW);
            for flag in [
                libc::CLONE_NEWUSER,
                libc::CLONE_NEWNS,
                libc::CLONE_NEWNET,
                libc::CLONE_NEWPID,
            ] {
                let flags = (flag | libc::SIGCHLD) as u64;
                assert_eq!(run(&program, arch, clone, [flags, 0, 0, 0, 0, 0]), eperm, "{flag:#x}");
            }
            assert_eq!(
                run(&program, arch, libc::SYS_clone3 as u32, [0; 6]),
                SECCOMP_RET_ERRNO | libc::ENOSYS as u32
            );
            let ioctl = libc::SYS_ioctl as u32;
            #[allow(clippy::unnecessary_cast)]
            for (request, verdict) in [
                (libc::TIOCSTI as u64, eperm),
                (libc::TIOCLINUX as u64, eperm),
                (0x5401, RET_ALLOW),
            ] {
                assert_eq!(
                    run(&program, arch, ioctl, [0, request, 0, 0, 0, 0]),
                    verdict,
                    "{request:#x}"
                );
            }
            let socket = libc::SYS_socket as u32;
            let inet = if network { RET_ALLOW } else { eperm };
            assert_eq!(run(&program, arch, socket, [libc::AF_INET as u64, 1, 0, 0, 0, 0]), inet);
            assert_eq!(
                run(&program, arch, socket, [libc::AF_UNIX as u64, 1, 0, 0, 0, 0]),
                RET_ALLOW
            );
            // Another architecture's calls end the process; x32 numbers are refused.
            assert_eq!(run(&program, arch ^ 1, 0, [0; 6]), RET_KILL_PROCESS);
            if cfg!(target_arch = "x86_64") {
                assert_eq!(
                    run(&program, arch, 0x4000_0000 | libc::SYS_unshare as u32, [0; 6]),
                    eperm
                );
                assert_eq!(run(&program, arch, 0x4000_0000, [0; 6]), eperm);
            }
            for denied in denied_syscalls() {
                assert_eq!(run(&program, arch, denied as u32, [0; 6]), eperm, "call {denied}");
            }
        }
    }
}
