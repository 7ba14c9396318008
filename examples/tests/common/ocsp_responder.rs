//! A contract PKI and a real OCSP responder for the Plug & Charge tests, both made by the
//! `openssl` command line: a root CA, a sub-CA it signs, leaf certificates the sub-CA signs
//! (each with an AIA OCSP URL naming the responder), and `openssl ocsp` serving an index
//! file in which each leaf is Valid or Revoked. Shared by the unit tests of
//! `ocpp_reference_csms::ocsp` (through `#[path]`) and the OCTT case tests.

#![allow(dead_code, unreachable_pub)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Whether `openssl` runs here; when it does not, a test prints why and returns, unless
/// `OCPP_INTEROP_REQUIRED` is set (then it fails).
pub fn openssl_available() -> bool {
    let found = Command::new("openssl")
        .arg("version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        assert!(
            std::env::var_os("OCPP_INTEROP_REQUIRED").is_none(),
            "openssl is required (OCPP_INTEROP_REQUIRED is set)"
        );
        eprintln!("skipped: the openssl command line is not installed");
    }
    found
}

fn run(dir: &Path, args: &[&str]) {
    let output = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run openssl");
    assert!(
        output.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A free loopback port (bound, read, released).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

/// One certificate made by [`Pki`]: files in the PKI's folder.
#[derive(Clone, Debug)]
pub struct Issued {
    /// PEM certificate.
    pub pem: PathBuf,
    /// PEM private key.
    pub key: PathBuf,
    /// Serial number, upper-case hex.
    pub serial: String,
    /// Subject CN.
    pub cn: String,
}

impl Issued {
    /// The certificate in DER.
    pub fn der(&self) -> Vec<u8> {
        let output = Command::new("openssl")
            .args(["x509", "-outform", "DER", "-in"])
            .arg(&self.pem)
            .output()
            .expect("openssl x509");
        assert!(output.status.success());
        output.stdout
    }

    /// The certificate in PEM.
    pub fn pem_text(&self) -> String {
        std::fs::read_to_string(&self.pem).expect("read pem")
    }
}

/// A root, a sub-CA, leaves; the responder's port is chosen when the PKI is made, so the
/// leaves' AIA names it.
pub struct Pki {
    /// The folder holding every file (removed on drop).
    pub dir: PathBuf,
    /// The root CA (self-signed).
    pub root: Issued,
    /// The sub-CA (signed by the root): issues the leaves and signs OCSP responses.
    pub sub_ca: Issued,
    /// The responder's URL (`http://127.0.0.1:PORT/`).
    pub responder_url: String,
    port: u16,
    next_serial: u32,
    index: Vec<String>,
}

impl Pki {
    /// A new PKI in a fresh temporary folder named after `name`.
    pub fn new(name: &str) -> Pki {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "ocpp-pnc-{name}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("pki dir");
        let port = free_port();
        let root = self_signed(&dir, "root", "MO Root CA");
        let mut pki = Pki {
            dir,
            root: root.clone(),
            sub_ca: root,
            responder_url: format!("http://127.0.0.1:{port}/"),
            port,
            next_serial: 0x1000,
            index: Vec::new(),
        };
        pki.sub_ca = pki.sign("sub", "MO Sub-CA 1", true, None);
        pki
    }

    /// A certificate signed by the sub-CA (`ca`: a CA itself), with an AIA OCSP URL (the
    /// responder's unless `ocsp_url` says otherwise), listed Valid in the index.
    pub fn issue(&mut self, file: &str, cn: &str) -> Issued {
        let url = self.responder_url.clone();
        let issued = self.sign(file, cn, false, Some(&url));
        self.index_entry(&issued, None);
        issued
    }

    /// Lists a certificate Revoked in the index.
    pub fn revoke(&mut self, issued: &Issued) {
        self.index
            .retain(|line| !line.contains(&format!("\t{}\t", issued.serial)));
        self.index_entry(issued, Some("250101000000Z"));
    }

    /// Drops a certificate from the index (the responder then answers unknown).
    pub fn forget(&mut self, issued: &Issued) {
        self.index
            .retain(|line| !line.contains(&format!("\t{}\t", issued.serial)));
    }

    fn index_entry(&mut self, issued: &Issued, revoked: Option<&str>) {
        let (flag, when) = match revoked {
            Some(time) => ("R", time),
            None => ("V", ""),
        };
        self.index.push(format!(
            "{flag}\t351231000000Z\t{when}\t{}\tunknown\t/CN={}",
            issued.serial, issued.cn
        ));
    }

    fn sign(&mut self, file: &str, cn: &str, ca: bool, ocsp_url: Option<&str>) -> Issued {
        self.next_serial += 1;
        let serial = format!("{:X}", self.next_serial);
        let key = format!("{file}.key");
        let csr = format!("{file}.csr");
        let pem = format!("{file}.pem");
        let ext = format!("{file}.ext");
        let mut extensions = String::new();
        if ca {
            extensions.push_str("basicConstraints=critical,CA:TRUE\n");
            extensions.push_str("keyUsage=critical,keyCertSign,cRLSign,digitalSignature\n");
        } else {
            extensions.push_str("basicConstraints=critical,CA:FALSE\n");
            extensions.push_str("keyUsage=critical,digitalSignature,keyAgreement\n");
        }
        if let Some(url) = ocsp_url {
            extensions.push_str(&format!("authorityInfoAccess=OCSP;URI:{url}\n"));
        }
        std::fs::write(self.dir.join(&ext), extensions).expect("ext file");
        let subject = format!("/CN={cn}");
        run(
            &self.dir,
            &[
                "ecparam",
                "-name",
                "prime256v1",
                "-genkey",
                "-noout",
                "-out",
                &key,
            ],
        );
        run(
            &self.dir,
            &["req", "-new", "-key", &key, "-subj", &subject, "-out", &csr],
        );
        let signer = if ca { &self.root } else { &self.sub_ca };
        let signer_pem = signer.pem.clone();
        let signer_key = signer.key.clone();
        run(
            &self.dir,
            &[
                "x509",
                "-req",
                "-in",
                &csr,
                "-CA",
                path_str(&signer_pem),
                "-CAkey",
                path_str(&signer_key),
                "-set_serial",
                &format!("0x{serial}"),
                "-days",
                "30",
                "-sha256",
                "-extfile",
                &ext,
                "-out",
                &pem,
            ],
        );
        Issued {
            pem: self.dir.join(pem),
            key: self.dir.join(key),
            serial,
            cn: cn.to_owned(),
        }
    }

    /// A self-signed certificate unrelated to this PKI (for a response signed by a stranger).
    pub fn stranger(&self) -> Issued {
        self_signed(&self.dir, "stranger", "Stranger")
    }

    /// Starts `openssl ocsp` on the PKI's port, answering from the index for the sub-CA,
    /// signing with the sub-CA (or with `signer` when given).
    pub fn responder(&self, signer: Option<&Issued>) -> Responder {
        let index = self.dir.join("index.txt");
        let mut text = self.index.join("\n");
        text.push('\n');
        std::fs::write(&index, text).expect("index");
        std::fs::write(self.dir.join("index.txt.attr"), "unique_subject = no\n").expect("attr");
        let signer = signer.unwrap_or(&self.sub_ca);
        let out = self.dir.join("ocsp.out");
        let log = std::fs::File::create(self.dir.join("ocsp.log")).expect("log");
        let child = Command::new("openssl")
            .arg("ocsp")
            .arg("-index")
            .arg(&index)
            .arg("-port")
            .arg(self.port.to_string())
            .arg("-rsigner")
            .arg(&signer.pem)
            .arg("-rkey")
            .arg(&signer.key)
            .arg("-CA")
            .arg(&self.sub_ca.pem)
            .arg("-ndays")
            .arg("1")
            .stdout(std::fs::File::create(&out).expect("out"))
            .stderr(log)
            .spawn()
            .expect("start openssl ocsp");
        // Ready when it prints ACCEPT (a probe connection would make it spin). openssl starts
        // in well under a second; 10 s was once not enough on a machine running two builds
        // beside the suite.
        let deadline = Instant::now() + Duration::from_secs(30);
        while !std::fs::read_to_string(&out)
            .unwrap_or_default()
            .contains("ACCEPT")
        {
            assert!(Instant::now() < deadline, "openssl ocsp did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        Responder { child }
    }

    /// The responder's log (what `openssl ocsp` printed).
    pub fn responder_log(&self) -> String {
        std::fs::read_to_string(self.dir.join("ocsp.log")).unwrap_or_default()
    }
}

impl Drop for Pki {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

fn self_signed(dir: &Path, file: &str, cn: &str) -> Issued {
    let key = format!("{file}.key");
    let pem = format!("{file}.pem");
    run(
        dir,
        &[
            "ecparam",
            "-name",
            "prime256v1",
            "-genkey",
            "-noout",
            "-out",
            &key,
        ],
    );
    run(
        dir,
        &[
            "req",
            "-x509",
            "-new",
            "-key",
            &key,
            "-subj",
            &format!("/CN={cn}"),
            "-days",
            "30",
            "-sha256",
            "-set_serial",
            "0x42",
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign,digitalSignature",
            "-out",
            &pem,
        ],
    );
    Issued {
        pem: dir.join(pem),
        key: dir.join(key),
        serial: "42".into(),
        cn: cn.to_owned(),
    }
}

/// A running `openssl ocsp`; killed (by its own handle) on drop.
pub struct Responder {
    child: Child,
}

impl Drop for Responder {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
