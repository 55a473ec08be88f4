//! `#[derive(Params)]` and `#[derive(ParamEnum)]` for oxmpi components.
//!
//! Use them through `oxmpi_plugin_api` (`use oxmpi_plugin_api::Params;`),
//! which re-exports both with the traits they implement; the generated code
//! names `::oxmpi_plugin_api`. The attributes are documented on each derive
//! and in `docs/components.md`.

// The workspace lints, written in the crate: component authors build this
// crate outside the workspace (docs/writing-a-component.md).
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]
#![warn(missing_docs, rust_2018_idioms)]

use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as Tokens};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{
    parse_macro_input, Attribute, Data, DeriveInput, Error, Expr, ExprLit, Fields, Lit, LitStr,
    RangeLimits, Result, Type,
};

/// Declares a component's parameters once, on a struct with named fields.
///
/// Generates `impl oxmpi_plugin_api::Params` (the declaration table
/// `DECLS`, the reader `read`/`read_from` and `check_fields`) and `Default`
/// (the declared defaults, parsed by the plugin API's value parser).
///
/// Each field has a `#[param(...)]` attribute:
///
/// - `default = "..."` (required): the default, written as a user would
///   write it; any `&'static str` constant expression;
/// - `level = User(Basic)` (required): `User`, `Tuner` or `Developer`, each
///   with `Basic`, `Detailed` or `All` (Open MPI's levels 1–9);
/// - `help = "..."`: the help text; without it the field's doc comment is
///   the help text (lines trimmed and joined with one space); one of the two
///   is required;
/// - `name = "..."`: the parameter's name (default: the field's name);
/// - `range = MIN..=MAX`: accepted integers (constant expressions);
/// - `size`: an integer field declared as a size (`size_t`) instead of an
///   `int`;
/// - `read_only`, `deprecated`, `internal`: flags;
/// - `synonym = "full_name"`, `deprecated_synonym = "full_name"` (may
///   repeat): other names;
/// - `group = SPEC`: the field's type is a parameter group
///   (`oxmpi_plugin_api::ParamGroup`, such as the btl framework's common
///   parameters) registered with the component's settings `SPEC`; no other
///   key is allowed;
/// - `skip` or `skip = EXPR`: not a parameter; the field is
///   `Default::default()` (or `EXPR`) in both `Default` and the reader.
#[proc_macro_derive(Params, attributes(param))]
pub fn derive_params(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    params(&input)
        .unwrap_or_else(Error::into_compile_error)
        .into()
}

/// Makes a fieldless enum the type of an `enum` parameter.
///
/// Each variant's number is its discriminant (`Ipv4 = 4`); its name is the
/// variant's name in snake case (`Ipv4` is `ipv4`) unless
/// `#[param(name = "...")]` gives another. Generates
/// `oxmpi_plugin_api::ParamField` (type `enum`, the named values) and
/// `oxmpi_plugin_api::ParamEnum`.
#[proc_macro_derive(ParamEnum, attributes(param))]
pub fn derive_param_enum(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    param_enum(&input)
        .unwrap_or_else(Error::into_compile_error)
        .into()
}

/// What one field of a `#[derive(Params)]` struct is.
enum Field {
    /// A parameter: its type and its declaration expression.
    Param { ty: Type, decl: Tokens },
    /// A group of parameters of type `ty`, registered with `spec`.
    Group { ty: Type, spec: Expr },
    /// Not a parameter; initialised with `init`.
    Skip { init: Tokens },
}

fn krate() -> Tokens {
    quote!(::oxmpi_plugin_api)
}

fn params(input: &DeriveInput) -> Result<Tokens> {
    let Data::Struct(data) = &input.data else {
        return Err(Error::new(
            input.span(),
            "#[derive(Params)] needs a struct with named fields",
        ));
    };
    let Fields::Named(named) = &data.fields else {
        return Err(Error::new(
            input.span(),
            "#[derive(Params)] needs a struct with named fields",
        ));
    };
    if !input.generics.params.is_empty() {
        return Err(Error::new(
            input.generics.span(),
            "#[derive(Params)] does not support generic structs",
        ));
    }
    let k = krate();
    let name = &input.ident;
    let mut fields = Vec::new();
    for f in &named.named {
        let ident = f.ident.clone().expect("named field");
        fields.push((ident.clone(), field(&ident, &f.ty, &f.attrs)?));
    }

    let mut plain = 0usize;
    let mut group_lens = Vec::new();
    let mut fill = Vec::new();
    let mut read = Vec::new();
    let mut check = Vec::new();
    let mut inits = Vec::new();
    for (ident, field) in &fields {
        let var = format_ident!("__param_{}", ident);
        match field {
            Field::Param { ty, decl } => {
                plain += 1;
                fill.push(quote! {
                    __out[__at] = #decl;
                    __at += 1;
                });
                read.push(quote! {
                    let #var = #k::params::read_field::<#ty>(__source, &__decls[__at])?;
                    __at += 1;
                });
                check.push(quote! {
                    #k::params::check_field::<#ty>(&__decls[__at])?;
                    __at += 1;
                });
            }
            Field::Group { ty, spec } => {
                group_lens.push(quote!(<#ty as #k::params::ParamGroup>::LEN));
                fill.push(quote! {
                    let __group = <#ty>::declarations(&#spec);
                    let mut __i = 0usize;
                    while __i < __group.len() {
                        __out[__at] = __group[__i];
                        __at += 1;
                        __i += 1;
                    }
                });
                read.push(quote! {
                    let __len = <#ty as #k::params::ParamGroup>::LEN;
                    let #var = <#ty as #k::params::ParamGroup>::read_group(
                        __source,
                        &__decls[__at..__at + __len],
                    )?;
                    __at += __len;
                });
                check.push(quote! {
                    let __len = <#ty as #k::params::ParamGroup>::LEN;
                    <#ty as #k::params::ParamGroup>::check_group(&__decls[__at..__at + __len])?;
                    __at += __len;
                });
            }
            Field::Skip { init } => {
                read.push(quote!(let #var = #init;));
            }
        }
        inits.push(quote!(#ident: #var));
    }

    Ok(quote! {
        impl #k::params::Params for #name {
            const DECLS: &'static [#k::ParamDecl] = &{
                const __LEN: usize = #plain #(+ #group_lens)*;
                let mut __out = [#k::params::PLACEHOLDER; __LEN];
                let mut __at = 0usize;
                #(#fill)*
                let _ = __at;
                __out
            };

            fn read_from(
                __source: &dyn #k::params::ParamSource,
            ) -> ::core::result::Result<Self, ::std::string::String> {
                let __decls = <Self as #k::params::Params>::DECLS;
                let mut __at = 0usize;
                #(#read)*
                let _ = __at;
                ::core::result::Result::Ok(#name { #(#inits),* })
            }

            fn check_fields() -> ::core::result::Result<(), ::std::string::String> {
                let __decls = <Self as #k::params::Params>::DECLS;
                let mut __at = 0usize;
                #(#check)*
                let _ = __at;
                ::core::result::Result::Ok(())
            }
        }

        impl ::core::default::Default for #name {
            /// The declared defaults, parsed by the plugin API's value
            /// parser. Panics if one does not parse or does not fit its
            /// field, which `check_declarations` (run by the component's
            /// tests) reports first.
            fn default() -> Self {
                <Self as #k::params::Params>::read_from(&#k::params::DeclaredDefaults)
                    .unwrap_or_else(|e| ::core::panic!("{}: {}", ::core::stringify!(#name), e))
            }
        }
    })
}

/// Parses one field's `#[param(...)]` attribute and doc comment.
fn field(ident: &syn::Ident, ty: &Type, attrs: &[Attribute]) -> Result<Field> {
    let k = krate();
    let mut name: Option<LitStr> = None;
    let mut default: Option<Expr> = None;
    let mut level: Option<Tokens> = None;
    let mut help: Option<Expr> = None;
    let mut range: Option<(Expr, Expr)> = None;
    let mut size = false;
    let mut flags = Vec::new();
    let mut synonyms = Vec::new();
    let mut group: Option<Expr> = None;
    let mut skip: Option<Tokens> = None;
    let mut seen_param = false;
    let mut keys = 0usize;
    for attr in attrs.iter().filter(|a| a.path().is_ident("param")) {
        seen_param = true;
        attr.parse_nested_meta(|meta| {
            keys += 1;
            let key = meta
                .path
                .get_ident()
                .map(ToString::to_string)
                .unwrap_or_default();
            match key.as_str() {
                "name" => name = Some(meta.value()?.parse()?),
                "default" => default = Some(meta.value()?.parse()?),
                "help" => help = Some(meta.value()?.parse()?),
                "level" => level = Some(parse_level(&meta.value()?.parse()?)?),
                "range" => {
                    let expr: Expr = meta.value()?.parse()?;
                    match expr {
                        Expr::Range(r) if matches!(r.limits, RangeLimits::Closed(_)) => {
                            match (r.start, r.end) {
                                (Some(lo), Some(hi)) => range = Some((*lo, *hi)),
                                _ => {
                                    return Err(meta.error("range needs both ends: MIN..=MAX"))
                                }
                            }
                        }
                        other => {
                            return Err(Error::new(
                                other.span(),
                                "range must be an inclusive range: MIN..=MAX",
                            ))
                        }
                    }
                }
                "size" => size = true,
                "read_only" => flags.push(quote!(#k::flags::READ_ONLY)),
                "deprecated" => flags.push(quote!(#k::flags::DEPRECATED)),
                "internal" => flags.push(quote!(#k::flags::INTERNAL)),
                "synonym" => {
                    let s: LitStr = meta.value()?.parse()?;
                    synonyms.push(quote!(#k::Synonym::alias(#s)));
                }
                "deprecated_synonym" => {
                    let s: LitStr = meta.value()?.parse()?;
                    synonyms.push(quote!(#k::Synonym::deprecated(#s)));
                }
                "group" => group = Some(meta.value()?.parse()?),
                "skip" => {
                    skip = Some(if meta.input.peek(syn::Token![=]) {
                        let e: Expr = meta.value()?.parse()?;
                        quote!(#e)
                    } else {
                        quote!(::core::default::Default::default())
                    })
                }
                _ => return Err(meta.error(format!("unknown param attribute `{key}`; expected name, default, level, help, range, size, read_only, deprecated, internal, synonym, deprecated_synonym, group or skip"))),
            }
            Ok(())
        })?;
    }
    if !seen_param {
        return Err(Error::new(
            ident.span(),
            format!("field `{ident}` needs #[param(default = \"...\", level = ...)] (or #[param(skip)] if it is not a parameter)"),
        ));
    }
    if let Some(init) = skip {
        if keys > 1 {
            return Err(Error::new(
                ident.span(),
                "a skipped field takes no other param attribute",
            ));
        }
        return Ok(Field::Skip { init });
    }
    if let Some(spec) = group {
        if keys > 1 {
            return Err(Error::new(
                ident.span(),
                "a group field takes no other param attribute: the group declares its parameters",
            ));
        }
        return Ok(Field::Group {
            ty: ty.clone(),
            spec,
        });
    }
    let default = default.ok_or_else(|| {
        Error::new(
            ident.span(),
            format!("parameter `{ident}` needs a default: #[param(default = \"...\")]"),
        )
    })?;
    let level = level.ok_or_else(|| {
        Error::new(
            ident.span(),
            format!("parameter `{ident}` needs a level: #[param(level = User(Basic))] (User, Tuner or Developer; Basic, Detailed or All)"),
        )
    })?;
    let help = match help {
        Some(h) => quote!(#h),
        None => {
            let doc = doc_text(attrs);
            if doc.is_empty() {
                return Err(Error::new(
                    ident.span(),
                    format!("parameter `{ident}` needs a help text: a doc comment or #[param(help = \"...\")]"),
                ));
            }
            let lit = LitStr::new(&doc, Span::call_site());
            quote!(#lit)
        }
    };
    let name = name.unwrap_or_else(|| LitStr::new(&ident.to_string(), ident.span()));
    let ty_tokens = if size {
        quote!(#k::ParamType::Size)
    } else {
        quote!(<#ty as #k::params::ParamField>::TYPE)
    };
    let range = range.map(|(lo, hi)| quote!(.with_range((#lo) as i64, (#hi) as i64)));
    let flags = if flags.is_empty() {
        quote!()
    } else {
        quote!(.with_flags(#(#flags)|*))
    };
    let synonyms = if synonyms.is_empty() {
        quote!()
    } else {
        quote!(.with_synonyms({
            const __SYNONYMS: &[#k::Synonym] = &[#(#synonyms),*];
            __SYNONYMS
        }))
    };
    let decl = quote_spanned! {ident.span()=>
        #k::ParamDecl::new(#name, #ty_tokens, #default, #level, #help)
            .with_enum(<#ty as #k::params::ParamField>::ENUM_VALUES)
            #range #flags #synonyms
    };
    Ok(Field::Param {
        ty: ty.clone(),
        decl,
    })
}

/// The field's doc comment: lines trimmed, empty ones dropped, joined with
/// one space.
fn doc_text(attrs: &[Attribute]) -> String {
    let mut lines = Vec::new();
    for attr in attrs.iter().filter(|a| a.path().is_ident("doc")) {
        if let syn::Meta::NameValue(nv) = &attr.meta {
            if let Expr::Lit(ExprLit {
                lit: Lit::Str(s), ..
            }) = &nv.value
            {
                let text = s.value();
                let line = text.trim();
                if !line.is_empty() {
                    lines.push(line.to_string());
                }
            }
        }
    }
    lines.join(" ")
}

/// `User(Basic)`, `Level::Tuner(Tier::All)`, … as the level's number
/// expression; anything else is an error at the attribute.
fn parse_level(expr: &Expr) -> Result<Tokens> {
    let k = krate();
    let bad = || {
        Error::new(
            expr.span(),
            "level must be User(..), Tuner(..) or Developer(..) with Basic, Detailed or All",
        )
    };
    let Expr::Call(call) = expr else {
        return Err(bad());
    };
    let last = |e: &Expr| match e {
        Expr::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
        _ => None,
    };
    let audience = last(&call.func).ok_or_else(bad)?;
    if call.args.len() != 1 {
        return Err(bad());
    }
    let tier = last(&call.args[0]).ok_or_else(bad)?;
    if !["User", "Tuner", "Developer"].contains(&audience.as_str())
        || !["Basic", "Detailed", "All"].contains(&tier.as_str())
    {
        return Err(bad());
    }
    let audience = format_ident!("{}", audience);
    let tier = format_ident!("{}", tier);
    Ok(quote!(#k::params::Level::#audience(#k::params::Tier::#tier).number()))
}

fn snake_case(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.extend(c.to_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

fn param_enum(input: &DeriveInput) -> Result<Tokens> {
    let Data::Enum(data) = &input.data else {
        return Err(Error::new(
            input.span(),
            "#[derive(ParamEnum)] needs a fieldless enum",
        ));
    };
    if !input.generics.params.is_empty() {
        return Err(Error::new(
            input.generics.span(),
            "#[derive(ParamEnum)] does not support generic enums",
        ));
    }
    let k = krate();
    let name = &input.ident;
    let rust = name.to_string();
    let mut values = Vec::new();
    let mut from = Vec::new();
    let mut names = Vec::new();
    for v in &data.variants {
        if !matches!(v.fields, Fields::Unit) {
            return Err(Error::new(
                v.span(),
                "#[derive(ParamEnum)] needs a fieldless enum",
            ));
        }
        let mut value_name = snake_case(&v.ident.to_string());
        for attr in v.attrs.iter().filter(|a| a.path().is_ident("param")) {
            attr.parse_nested_meta(|meta| {
                if meta.path.is_ident("name") {
                    let s: LitStr = meta.value()?.parse()?;
                    value_name = s.value();
                    Ok(())
                } else {
                    Err(meta.error("expected name = \"...\""))
                }
            })?;
        }
        let ident = &v.ident;
        values.push(quote!(#k::EnumValue::new(#name::#ident as i64, #value_name)));
        from.push(quote!(#k::ParamValue::Int(v) if v == #name::#ident as i64 => ::core::result::Result::Ok(#name::#ident)));
        names.push(quote!(#name::#ident => #value_name));
    }
    Ok(quote! {
        impl #k::params::ParamField for #name {
            const TYPE: #k::ParamType = #k::ParamType::Enum;
            const ENUM_VALUES: &'static [#k::EnumValue] = &[#(#values),*];

            fn from_param(value: #k::ParamValue) -> ::core::result::Result<Self, ::std::string::String> {
                match value {
                    #(#from,)*
                    other => #k::params::bad_enum_value(other, #rust),
                }
            }

            fn check_decl(decl: &#k::ParamDecl) -> ::core::result::Result<(), ::std::string::String> {
                #k::params::check_enum_decl(decl, <Self as #k::params::ParamField>::ENUM_VALUES, #rust)
            }
        }

        impl #k::params::ParamEnum for #name {
            fn number(self) -> i64 {
                self as i64
            }

            fn name(self) -> &'static str {
                match self {
                    #(#names,)*
                }
            }
        }
    })
}
