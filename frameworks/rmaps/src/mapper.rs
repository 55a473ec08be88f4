//! What a mapper component implements, and the macro that makes it a
//! component.
//!
//! A mapper is a [`Mapper`]: its name, its parameters (a
//! `#[derive(oxmpi_plugin_api::Params)]` struct with a `priority: i32`
//! field), the `--map-by` policy names it adds ([`Mapper::POLICIES`]), which
//! built-in policies it takes ([`Mapper::accepts`]) and the mapping itself,
//! usually built on [`crate::base`]. [`export_mapper_component!`](crate::export_mapper_component) turns it
//! into a component (lifecycle, parameters, [`crate::module::RmapsModule`],
//! root module). One mapper maps each job: [`crate::selection`] picks it.
//!
//! The generated entry points run every call under the panic guard: a
//! panic in [`Mapper::accepts`] or [`Mapper::map`] becomes a
//! [`crate::MapErrorKind::ComponentFailed`] error that callers see through
//! [`RmapsHandle`](crate::handle::RmapsHandle), unreadable input a
//! [`crate::MapErrorKind::BadRequest`], and a request with a policy the
//! mapper does not accept is refused before [`Mapper::map`] runs, so a
//! mapper may rely on its own `accepts`. The parameters `query` read are
//! the component's only state ([`crate::module::ParamsCell`] says why that
//! is not an [`oxmpi_plugin_api::Instance`]). Every mapper component's tests
//! run the conformance suite (`testkit::conformance`, feature `testkit`).
//!
//! The in-tree mappers:
//!
//! | component | priority | policies |
//! |---|---|---|
//! | `ppr` | 90 | `ppr:N:RESOURCE` |
//! | `seq` | 60 | `seq` |
//! | `round_robin` | 10 | `slot`, `node`, `core`, `hwthread`, `package`, `numa` |

use crate::error::MapError;
use crate::jobmap::JobMap;
use crate::module::PolicyName;
use crate::policy::MapPolicy;
use crate::request::MapRequest;

/// What a mapper's parameter struct must be: declared with
/// `#[derive(oxmpi_plugin_api::Params)]` (which gives `Default`), `Clone`
/// and `Send`. [`export_mapper_component!`](crate::export_mapper_component) also needs a `priority: i32`
/// field (`rmaps_<name>_priority`).
pub trait MapperParams: oxmpi_plugin_api::Params + Clone + Default + Send + 'static {}

impl<T: oxmpi_plugin_api::Params + Clone + Default + Send + 'static> MapperParams for T {}

/// A mapper component.
pub trait Mapper: Sync + 'static {
    /// Its parameters, as `query` read them (the declared defaults when a
    /// test maps through the component without the core).
    type Params: MapperParams;
    /// Component name (`round_robin`, `seq`, `ppr`).
    const NAME: &'static str;
    /// The `--map-by` policy names it adds (none by default). mpirun's
    /// parser accepts them while the component is installed, and a job
    /// with one of them is offered to this component
    /// ([`crate::module::accepts`]) without asking [`Mapper::accepts`].
    const POLICIES: &'static [PolicyName] = &[];
    /// Whether it maps jobs with this built-in policy (default: none, only
    /// its own [`Mapper::POLICIES`]).
    fn accepts(&self, policy: &MapPolicy) -> bool {
        let _ = policy;
        false
    }
    /// Maps the job (only called with a policy [`Mapper::accepts`] took,
    /// or one of [`Mapper::POLICIES`]). Errors leave nothing half-done: the
    /// caller launches nothing.
    fn map(&self, req: &MapRequest, params: &Self::Params) -> Result<JobMap, MapError>;
}

/// Defines a complete rmaps component around a [`Mapper`] (a unit
/// struct): a query answering the `priority` parameter, the parameters
/// kept for `map`, the [`crate::module::RmapsModule`] (its `policies` from
/// [`Mapper::POLICIES`]) as `MODULE`, the exported root module, and
/// `candidate()` (the component with its default priority, for tests that
/// run requests through [`crate::selection`]). The component crate depends
/// on `oxmpi-plugin-api` (the parameter derive and the expansion name it)
/// and this crate, not on abi_stable.
///
/// The common case, a priority and nothing else, declares the parameter
/// struct `Params` (`rmaps_<name>_priority`) for you:
///
/// ```ignore
/// oxmpi_framework_rmaps::export_mapper_component! {
///     mapper: Seq,              // impl Mapper for Seq { type Params = crate::Params; … }
///     name: "seq",
///     priority: 60,
///     description: "Sequential mapper",
/// }
/// ```
///
/// A component with parameters of its own passes its
/// `#[derive(Params)]` struct (which has a `priority: i32` field), and may
/// give its own version (`oxmpi_info` shows it; default 1.0.0):
///
/// ```ignore
/// oxmpi_framework_rmaps::export_mapper_component! {
///     mapper: Reverse,          // impl Mapper for Reverse { type Params = Config; … }
///     name: "reverse",
///     params: Config,
///     description: "Places ranks in reverse slot order",
///     version: oxmpi_plugin_api::Version::new(0, 3, 1),
/// }
/// ```
#[macro_export]
macro_rules! export_mapper_component {
    (mapper: $mapper:path, name: $name:literal, priority: $prio:literal, description: $desc:literal $(,)?) => {
        /// The component's parameters (`rmaps_<name>_<param>`), declared
        /// once: `Params::DECLS` is the table in the root module.
        #[derive(::oxmpi_plugin_api::Params, Clone, Debug, PartialEq, Eq)]
        pub struct Params {
            /// `rmaps_<name>_priority`.
            #[param(
                default = concat!($prio),
                level = Developer(All),
                help = concat!(
                    "Selection priority of the ",
                    $name,
                    " mapper: usable mappers are tried from the highest priority down, and the first that accepts the job's mapping policy maps it."
                )
            )]
            pub priority: i32,
        }

        #[cfg(test)]
        mod __oxmpi_mapper_priority_tests {
            #[test]
            fn the_default_is_the_priority() {
                assert_eq!(super::Params::default().priority, $prio);
            }
        }

        $crate::export_mapper_component! {
            mapper: $mapper,
            name: $name,
            params: Params,
            description: $desc,
        }
    };
    (mapper: $mapper:path, name: $name:literal, params: $params:ty, description: $desc:literal $(, version: $ver:expr)? $(,)?) => {
        $crate::__mapper_module!($mapper, $params);

        /// The component's lifecycle.
        pub struct Component;

        impl ::oxmpi_plugin_api::Lifecycle for Component {
            fn query(
                ctx: &::oxmpi_plugin_api::ComponentContext,
            ) -> Result<::oxmpi_plugin_api::QueryReply, ::oxmpi_plugin_api::ComponentError> {
                let params = <$params as ::oxmpi_plugin_api::Params>::read(ctx)
                    .map_err(::oxmpi_plugin_api::ComponentError::failed)?;
                let priority = params.priority;
                __OXMPI_MAPPER_PARAMS.set(params);
                Ok(::oxmpi_plugin_api::QueryReply::Usable { priority })
            }
        }

        #[cfg(test)]
        mod __oxmpi_mapper_declaration_tests {
            #[allow(unused_imports)]
            use super::*;
            use ::oxmpi_plugin_api::Params as _;

            #[test]
            fn parameters_and_policy_names_are_valid() {
                <$params>::check_declarations().unwrap();
                assert!(<$params as ::oxmpi_plugin_api::Params>::DECLS
                    .iter()
                    .any(|d| d.name.as_str() == "priority"));
                assert_eq!(<$mapper as $crate::Mapper>::NAME, $name);
                for p in <$mapper as $crate::Mapper>::POLICIES {
                    p.check().unwrap();
                }
            }
        }

        /// This component as a selection candidate with its default
        /// priority (tests and benchmarks that map without the core).
        pub fn candidate() -> $crate::selection::Candidate {
            $crate::selection::Candidate::new(
                $name,
                <$params as ::core::default::Default>::default().priority,
                MODULE,
            )
        }

        ::oxmpi_plugin_api::export_component! {
            lifecycle: Component,
            framework: "rmaps",
            component: $name,
            version: $crate::__mapper_version!($($ver)?),
            interface: $crate::INTERFACE_VERSION,
            description: $desc,
            params: <$params as ::oxmpi_plugin_api::Params>::DECLS,
            module: &MODULE,
        }
    };
}

/// Implementation detail of [`export_mapper_component!`](crate::export_mapper_component):
/// the module of mapper `$mapper` with parameters `$params` — the kept
/// parameters (`__OXMPI_MAPPER_PARAMS`), the `extern "C"` entry points over
/// [`crate::module::serve_accepts`], [`crate::module::serve_accepts_checked`]
/// and [`crate::module::serve_map`], and the table as `MODULE`. The test
/// kit's own tests make modules of test mappers with it (without a root
/// module, of which a library has one).
#[doc(hidden)]
#[macro_export]
macro_rules! __mapper_module {
    ($mapper:path, $params:ty) => {
        /// The parameters the core's query read, kept for `map`.
        static __OXMPI_MAPPER_PARAMS: $crate::module::ParamsCell<$params> =
            $crate::module::ParamsCell::new();

        extern "C" fn __oxmpi_mapper_accepts(
            policy_json: ::oxmpi_plugin_api::reexports::RStr<'_>,
        ) -> bool {
            $crate::module::serve_accepts(&$mapper, policy_json)
        }

        extern "C" fn __oxmpi_mapper_accepts_checked(
            policy_json: ::oxmpi_plugin_api::reexports::RStr<'_>,
        ) -> ::oxmpi_plugin_api::reexports::RResult<bool, ::oxmpi_plugin_api::reexports::RString> {
            $crate::module::serve_accepts_checked(&$mapper, policy_json)
        }

        extern "C" fn __oxmpi_mapper_map(
            request_json: ::oxmpi_plugin_api::reexports::RStr<'_>,
        ) -> ::oxmpi_plugin_api::reexports::RResult<
            ::oxmpi_plugin_api::reexports::RString,
            ::oxmpi_plugin_api::reexports::RString,
        > {
            $crate::module::serve_map(&$mapper, &__OXMPI_MAPPER_PARAMS.get(), request_json)
        }

        const __OXMPI_MAPPER_MODULE: &::oxmpi_plugin_api::reexports::WithMetadata<
            $crate::module::RmapsModule,
        > = &::oxmpi_plugin_api::reexports::WithMetadata::new($crate::module::RmapsModule {
            accepts: __oxmpi_mapper_accepts,
            map: __oxmpi_mapper_map,
            policies: ::oxmpi_plugin_api::reexports::RSlice::from_slice(
                <$mapper as $crate::Mapper>::POLICIES,
            ),
            accepts_checked: __oxmpi_mapper_accepts_checked,
        });

        /// The component's rmaps module.
        pub static MODULE: $crate::module::RmapsModuleRef =
            $crate::module::RmapsModuleRef(__OXMPI_MAPPER_MODULE.static_as_prefix());
    };
}

/// Implementation detail of [`export_mapper_component!`](crate::export_mapper_component): the component
/// version, 1.0.0 unless given.
#[doc(hidden)]
#[macro_export]
macro_rules! __mapper_version {
    () => {
        ::oxmpi_plugin_api::Version::new(1, 0, 0)
    };
    ($ver:expr) => {
        $ver
    };
}
