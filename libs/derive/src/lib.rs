//! `#[derive(Equivalence)]` for the oxmpi Rust API.
//!
//! Use it through `oxmpi` (`use oxmpi::traits::*;` or
//! `use oxmpi::Equivalence;`), which re-exports it next to the trait it
//! implements; the generated code names `::oxmpi`. What it accepts and
//! how the values travel is documented on the re-export and in
//! `docs/datatypes.md`.

use proc_macro::TokenStream;
use proc_macro2::TokenStream as Tokens;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{parse_macro_input, Data, DeriveInput, Error, Expr, Fields, Result, Type};

/// Implements `oxmpi::datatype::Equivalence` for a struct whose fields
/// are all `Equivalence` (primitive numbers, structs that derive it, and
/// arrays `[T; N]` of them, nested to any depth).
///
/// Refused with a compile error: enums, unions, structs without fields,
/// generic structs (lifetimes and type or const parameters), fields that
/// are references or raw pointers, and fields whose type is not
/// `Equivalence`. The struct must also be `Copy`.
#[proc_macro_derive(Equivalence)]
pub fn derive_equivalence(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    match expand(&input) {
        Ok(tokens) => tokens.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

/// A field's element type and how many of them it holds (arrays
/// flattened: `[[T; 2]; 3]` is 6 of `T`).
struct Element<'a> {
    ty: &'a Type,
    /// The array lengths, outermost first.
    lengths: Vec<&'a Expr>,
}

/// Peels arrays off a field's type; refuses references and pointers.
fn element_of(ty: &Type) -> Result<Element<'_>> {
    match ty {
        Type::Array(a) => {
            let mut inner = element_of(&a.elem)?;
            inner.lengths.insert(0, &a.len);
            Ok(inner)
        }
        Type::Paren(p) => element_of(&p.elem),
        Type::Group(g) => element_of(&g.elem),
        Type::Reference(_) => Err(Error::new(
            ty.span(),
            "#[derive(Equivalence)]: a field cannot be a reference (an address means nothing in another process); send the value it points to instead",
        )),
        Type::Ptr(_) => Err(Error::new(
            ty.span(),
            "#[derive(Equivalence)]: a field cannot be a raw pointer (an address means nothing in another process); send the value it points to instead",
        )),
        _ => Ok(Element {
            ty,
            lengths: Vec::new(),
        }),
    }
}

fn expand(input: &DeriveInput) -> Result<Tokens> {
    let name = &input.ident;
    let fields = match &input.data {
        Data::Struct(s) => &s.fields,
        Data::Enum(e) => {
            return Err(Error::new(
                e.enum_token.span(),
                format!("#[derive(Equivalence)] is for structs; `{name}` is an enum, and not every bit pattern is one of its variants, so a received value could be invalid; send its discriminant and fields in a struct instead"),
            ))
        }
        Data::Union(u) => {
            return Err(Error::new(
                u.union_token.span(),
                format!("#[derive(Equivalence)] is for structs; `{name}` is a union, whose active field a message cannot tell; send a struct instead"),
            ))
        }
    };
    if !input.generics.params.is_empty() {
        return Err(Error::new(
            input.generics.span(),
            format!("#[derive(Equivalence)] does not support generic structs (`{name}` has parameters): each type's description is cached once per type; define a struct without parameters for each element type you send"),
        ));
    }
    if fields.is_empty() {
        return Err(Error::new(
            input.ident.span(),
            format!("#[derive(Equivalence)]: `{name}` has no fields, so a message of it would carry nothing; add a field or send no message"),
        ));
    }
    let krate = quote!(::oxmpi::datatype::__derive);
    let mut checks = Vec::new();
    let mut zeros = Vec::new();
    let mut sizes = Vec::new();
    let mut layout = Vec::new();
    for (i, field) in fields.iter().enumerate() {
        let member = match &field.ident {
            Some(id) => quote!(#id),
            None => {
                let index = syn::Index::from(i);
                quote!(#index)
            }
        };
        let element = element_of(&field.ty)?;
        let ty = element.ty;
        let span = ty.span();
        checks.push(quote_spanned! {span=>
            let _ = #krate::IsEquivalence::<#ty>::NEW;
        });
        let mut zero = quote!(<#ty as ::oxmpi::datatype::Equivalence>::ZERO);
        for len in element.lengths.iter().rev() {
            zero = quote!([#zero; #len]);
        }
        zeros.push(quote!(#member: #zero));
        let count = if element.lengths.is_empty() {
            quote!(1usize)
        } else {
            let lengths = &element.lengths;
            quote!(1usize #(* (#lengths))*)
        };
        sizes.push(quote!(<#ty as ::oxmpi::datatype::Equivalence>::PACKED_SIZE * (#count)));
        layout.push(quote! {
            #krate::Field {
                offset: ::core::mem::offset_of!(Self, #member),
                count: #count,
                datatype: <#ty as ::oxmpi::datatype::Equivalence>::datatype(),
            }
        });
    }
    let construct = match fields {
        Fields::Named(_) | Fields::Unnamed(_) => quote!(#name { #(#zeros),* }),
        Fields::Unit => unreachable!("a struct without fields was refused above"),
    };
    let text = name.to_string();
    Ok(quote! {
        const _: () = {
            #[allow(dead_code)]
            fn fields_are_equivalence() {
                #(#checks)*
            }

            // SAFETY: every field is `Equivalence` (checked above: no
            // padding inside it matters, every bit pattern is valid for
            // it), so every bit pattern of the fields' bytes is a valid
            // value; padding between fields is never read, because a type
            // with padding is packed field by field through `datatype()`,
            // which places each field at its `offset_of!`.
            unsafe impl ::oxmpi::datatype::Equivalence for #name {
                const NAME: &'static str = #text;
                const ZERO: Self = #construct;
                const ELEMENT: #krate::ElementCode = #krate::ElementCode::User;
                const PACKED_SIZE: usize = {
                    let size = 0usize #(+ #sizes)*;
                    assert!(size > 0, "#[derive(Equivalence)]: the struct holds no data (only empty arrays); a message of it would carry nothing");
                    size
                };
                const DERIVED: bool = true;

                fn datatype() -> &'static #krate::Datatype {
                    static TYPE: #krate::OnceLock<#krate::Datatype> = #krate::OnceLock::new();
                    TYPE.get_or_init(|| {
                        #krate::structure(#text, ::core::mem::size_of::<Self>(), &[#(#layout),*])
                    })
                }
            }
        };
    })
}
