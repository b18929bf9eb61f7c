//! `kind = "kiss-tcp"`: a KISS TNC on TCP (Direwolf's KISS port, 8001).

use super::kiss::KissDev;
use super::{BadKey, Keys, KindDef, KissSetup, Opening, Spec};

/// The kind's row.
pub(super) const KIND: KindDef = KindDef {
    name: "kiss-tcp",
    arg: "HOST:PORT",
    check,
    from_arg: |rest, _| {
        Some(Keys {
            address: rest.to_string(),
            ..Keys::default()
        })
    },
};

#[derive(Debug)]
struct KissTcp {
    /// The TNC's address, HOST:PORT.
    address: String,
}

fn check(k: &Keys) -> Result<super::Kind, BadKey> {
    if k.address
        .rsplit_once(':')
        .and_then(|(_, port)| port.parse::<u16>().ok())
        .is_none()
    {
        return Err(BadKey::new(
            "address",
            format!(
                "expected \"HOST:PORT\" such as \"127.0.0.1:8001\", got {:?}",
                k.address
            ),
        ));
    }
    Ok(super::Kind::new(KissTcp {
        address: k.address.clone(),
    }))
}

impl Spec for KissTcp {
    fn describe(&self) -> String {
        format!("kiss-tcp {}", self.address)
    }

    fn for_users(&self) -> String {
        "KISS TNC (TCP)".into()
    }

    fn default_modem_baud(&self) -> u32 {
        super::kiss::DEFAULT_MODEM_BAUD
    }

    fn open(&self, kiss: KissSetup) -> Opening {
        let addr = self.address.clone();
        Box::pin(async move {
            let s = tokio::net::TcpStream::connect(addr).await?;
            let _ = s.set_nodelay(true);
            Ok(KissDev::open(Box::new(s), kiss))
        })
    }
}
