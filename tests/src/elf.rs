//! Just enough of a 32-bit little-endian ELF reader to size a firmware
//! image and list its symbols (no dependencies).

use std::path::Path;

/// One section header.
#[derive(Clone, Debug)]
pub struct Section {
    /// Name.
    pub name: String,
    /// `sh_type` (1: PROGBITS, 8: NOBITS).
    pub kind: u32,
    /// `sh_flags` (2: ALLOC, 1: WRITE).
    pub flags: u32,
    /// Address where it runs.
    pub addr: u32,
    /// Bytes.
    pub size: u32,
}

/// The sections and symbol names of an ELF image.
#[derive(Clone, Debug)]
pub struct Image {
    /// Section headers.
    pub sections: Vec<Section>,
    /// Names in the symbol table.
    pub symbols: Vec<String>,
}

const SHT_PROGBITS: u32 = 1;
const SHT_SYMTAB: u32 = 2;
const SHT_NOBITS: u32 = 8;
const SHF_ALLOC: u32 = 2;

/// Start of RAM on `mps2-an386` (what runs at or above it is RAM).
pub const RAM_ORIGIN: u32 = 0x2000_0000;

/// Symbols that only a heap brings into an image.
pub const ALLOCATION_SYMBOLS: [&str; 12] = [
    "__rust_alloc",
    "__rust_alloc_zeroed",
    "__rust_realloc",
    "__rust_dealloc",
    "__rust_alloc_error_handler",
    "__rg_alloc",
    "__rdl_alloc",
    "__rust_no_alloc_shim_is_unstable",
    "malloc",
    "calloc",
    "realloc",
    "free",
];

fn u16_at(d: &[u8], at: usize) -> Result<u16, String> {
    d.get(at..at + 2).map(|b| u16::from_le_bytes([b[0], b[1]])).ok_or_else(|| "truncated ELF".to_string())
}

fn u32_at(d: &[u8], at: usize) -> Result<u32, String> {
    d.get(at..at + 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])).ok_or_else(|| "truncated ELF".to_string())
}

fn c_str(d: &[u8], at: usize) -> String {
    let tail = d.get(at..).unwrap_or(&[]);
    let end = tail.iter().position(|&b| b == 0).unwrap_or(tail.len());
    String::from_utf8_lossy(&tail[..end]).into_owned()
}

impl Image {
    /// Reads the ELF at `path`.
    pub fn read(path: &Path) -> Result<Image, String> {
        let d = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Image::parse(&d).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Parses an ELF32 little-endian image.
    pub fn parse(d: &[u8]) -> Result<Image, String> {
        if d.get(..6) != Some(&[0x7f, b'E', b'L', b'F', 1, 1]) {
            return Err("not a 32-bit little-endian ELF".into());
        }
        let shoff = u32_at(d, 0x20)? as usize;
        let shentsize = u16_at(d, 0x2E)? as usize;
        let shnum = u16_at(d, 0x30)? as usize;
        let shstrndx = u16_at(d, 0x32)? as usize;
        let header = |i: usize| shoff + i * shentsize;
        let names_at = u32_at(d, header(shstrndx) + 16)? as usize;
        let mut sections = Vec::new();
        let mut symtab = None;
        for i in 0..shnum {
            let h = header(i);
            let kind = u32_at(d, h + 4)?;
            let (offset, size) = (u32_at(d, h + 16)? as usize, u32_at(d, h + 20)?);
            if kind == SHT_SYMTAB {
                symtab = Some((offset, size as usize, u32_at(d, h + 24)? as usize));
            }
            sections.push(Section {
                name: c_str(d, names_at + u32_at(d, h)? as usize),
                kind,
                flags: u32_at(d, h + 8)?,
                addr: u32_at(d, h + 12)?,
                size,
            });
        }
        let mut symbols = Vec::new();
        if let Some((offset, size, link)) = symtab {
            let strings = u32_at(d, header(link) + 16)? as usize;
            for s in (offset..offset + size).step_by(16) {
                let name = c_str(d, strings + u32_at(d, s)? as usize);
                if !name.is_empty() {
                    symbols.push(name);
                }
            }
        }
        Ok(Image { sections, symbols })
    }

    fn allocated(&self) -> impl Iterator<Item = &Section> {
        self.sections.iter().filter(|s| s.flags & SHF_ALLOC != 0 && s.size > 0)
    }

    /// Bytes stored in flash: every allocated section with contents (code,
    /// read-only data, the vector table, and the initial values of `.data`).
    pub fn flash_bytes(&self) -> u32 {
        self.allocated().filter(|s| s.kind == SHT_PROGBITS).map(|s| s.size).sum()
    }

    /// Bytes of static RAM: allocated sections that run in RAM (`.data`,
    /// `.bss`, `.uninit`); the stack is not a section.
    pub fn static_ram_bytes(&self) -> u32 {
        self.allocated()
            .filter(|s| s.addr >= RAM_ORIGIN && (s.kind == SHT_PROGBITS || s.kind == SHT_NOBITS))
            .map(|s| s.size)
            .sum()
    }

    /// The size of the named section, 0 if there is none.
    pub fn section_size(&self, name: &str) -> u32 {
        self.sections.iter().filter(|s| s.name == name).map(|s| s.size).sum()
    }

    /// The allocation symbols ([`ALLOCATION_SYMBOLS`]) the image holds.
    pub fn allocation_symbols(&self) -> Vec<String> {
        let mut found: Vec<String> =
            self.symbols.iter().filter(|s| ALLOCATION_SYMBOLS.contains(&s.as_str())).cloned().collect();
        found.sort();
        found.dedup();
        found
    }
}
