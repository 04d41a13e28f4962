//! The declaration of a list of coverage marks, shared by the fault marks (`fault.rs`) and
//! the workload marks (`feature.rs`).

/// Declares a list of coverage marks: an enum with `ALL`, `COUNT`, `name` (the trace and
/// summary name) and `rare` (whether seeds 0..200 may miss it: drawn rarely on purpose, or
/// reached only in one gateway mode). Each line: doc, variant, name, and `, rare` if so.
macro_rules! marks {
    ($(#[doc = $edoc:literal])* enum $Enum:ident {
        $($(#[doc = $doc:literal])* $variant:ident = $name:literal $(, $rare:ident)?;)+
    }) => {
        $(#[doc = $edoc])*
        #[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
        pub enum $Enum {
            $($(#[doc = $doc])* $variant,)+
        }

        impl $Enum {
            /// Every mark, in declaration order.
            pub const ALL: &'static [$Enum] = &[$($Enum::$variant,)+];
            /// How many marks.
            pub const COUNT: usize = Self::ALL.len();

            /// The trace and summary name.
            pub fn name(self) -> &'static str {
                match self {
                    $($Enum::$variant => $name,)+
                }
            }

            /// Whether seeds 0..200 may miss the mark.
            pub fn rare(self) -> bool {
                match self {
                    $($Enum::$variant => $crate::plan::marks::marks!(@rare $($rare)?),)+
                }
            }
        }
    };
    (@rare rare) => { true };
    (@rare) => { false };
}
pub(crate) use marks;
