//! `gfxkit completions SHELL` and `gfxkit manpage`: generated from the command line's own
//! definition ([`super::Cli`]) by `clap_complete` and `clap_mangen`, so they name every
//! subcommand and option the program accepts.

use anyhow::{Context, Result};
use clap::CommandFactory;
use std::io::Write;
use std::process::ExitCode;

/// Arguments of `gfxkit completions`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Install (one line each):\n  \
bash:       gfxkit completions bash > ~/.local/share/bash-completion/completions/gfxkit\n  \
zsh:        gfxkit completions zsh > ~/.zfunc/_gfxkit   (with fpath+=~/.zfunc before compinit)\n  \
fish:       gfxkit completions fish > ~/.config/fish/completions/gfxkit.fish\n  \
powershell: gfxkit completions powershell >> $PROFILE")]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    shell: clap_complete::Shell,
}

/// Arguments of `gfxkit manpage`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Read it now: gfxkit manpage | man -l -\n\
Install: gfxkit manpage --dir ~/.local/share/man/man1 (then: man gfxkit, man gfxkit-list)")]
pub struct ManpageArgs {
    /// Write one page per command into DIR (gfxkit.1, gfxkit-list.1, gfxkit-kpack-split.1,
    /// ...) instead of printing the single page that holds them all.
    #[arg(long, value_name = "DIR")]
    dir: Option<std::path::PathBuf>,
}

/// Writes the completion script of `args.shell` to stdout.
pub fn run_completions(args: CompletionsArgs) -> Result<ExitCode> {
    let mut cmd = super::Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "gfxkit", &mut out);
    write_stdout(&out)
}

/// Prints the manual page (roff): gfxkit(1), then one section per command and subcommand
/// with its synopsis, description and options; with `--dir`, writes each as its own page.
pub fn run_manpage(args: ManpageArgs) -> Result<ExitCode> {
    let mut cmd = super::Cli::command().disable_help_subcommand(true);
    cmd.build();
    if let Some(dir) = args.dir {
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        let mut pages = Vec::new();
        pages_of(&cmd, &mut pages);
        for man in pages {
            let mut page = Vec::new();
            man.render(&mut page)
                .context("cannot render the manual page")?;
            crate::output::write_atomic(&dir.join(man.get_filename()), &page)?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = Vec::new();
    clap_mangen::Man::new(cmd.clone())
        .render(&mut out)
        .context("cannot render the manual page")?;
    sections_of(&cmd, "gfxkit", &mut out)?;
    write_stdout(&out)
}

/// The pages of `cmd` and of every subcommand below it, as `clap_mangen` names them.
fn pages_of(cmd: &clap::Command, out: &mut Vec<clap_mangen::Man>) {
    out.push(clap_mangen::Man::new(cmd.clone()));
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        pages_of(sub, out);
    }
}

/// Appends to a page a section per subcommand of `cmd` (recursively): its heading is the
/// command line (`GFXKIT KPACK SPLIT`), its parts subsections.
fn sections_of(cmd: &clap::Command, prefix: &str, out: &mut Vec<u8>) -> Result<()> {
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("{prefix} {}", sub.get_name());
        let man = clap_mangen::Man::new(sub.clone());
        let mut part = Vec::new();
        man.render_synopsis_section(&mut part)?;
        man.render_description_section(&mut part)?;
        if sub.get_arguments().any(|a| !a.is_hide_set()) {
            man.render_options_section(&mut part)?;
        }
        if sub.get_after_help().is_some() || sub.get_after_long_help().is_some() {
            man.render_extra_section(&mut part)?;
        }
        writeln!(out, ".SH \"{}\"", name.to_uppercase())?;
        // The page's sections become this command's subsections.
        for line in String::from_utf8_lossy(&part).lines() {
            match line.strip_prefix(".SH ") {
                Some(rest) => writeln!(out, ".SS {rest}")?,
                None => writeln!(out, "{line}")?,
            }
        }
        sections_of(sub, &name, out)?;
    }
    Ok(())
}

fn write_stdout(bytes: &[u8]) -> Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    out.write_all(bytes).context("cannot write stdout")?;
    out.flush().context("cannot write stdout")?;
    Ok(ExitCode::SUCCESS)
}
